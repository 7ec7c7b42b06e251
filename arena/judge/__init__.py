"""`arena judge`: a vision model votes on stored, voted battles (both orders,
to cancel position bias) and is compared with the human votes. Verdicts are
stored in `judge_verdicts`, so a judge board can stand beside the human one."""
