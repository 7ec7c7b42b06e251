"""Expert re-votes: reviewers get a revocable link (`arena reviewers add
NAME`), re-vote sampled, anonymised, re-shuffled battles on `/review`, and
`arena review stats` (or the admin API) compares them with the crowd and
with each other, as GeoArena checked its crowd against experts."""
