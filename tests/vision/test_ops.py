"""Image operations and the fixed policy on real sample photos."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageFilter

from arena.vision.ops import (
    ImageOpError,
    auxiliary_lines,
    colour_name,
    crop,
    estimate_tilt,
    pixel_analysis,
    rotate,
    super_resolution,
)
from arena.vision.policy import PolicyView, crop_boxes, fixed_policy_views, searched_views


class TestCrop:
    def test_normalised_box_gives_exact_pixels(self, street: Image.Image) -> None:
        out = crop(street, [0.25, 0.5, 0.75, 1.0])
        assert out.size == (640, 335)  # 1280x671 photo; 335.5 rounds to row 336
        assert np.array_equal(np.asarray(out), np.asarray(street)[336:671, 320:960])

    @pytest.mark.parametrize(
        "box, reason",
        [
            ([0, 0, 640, 300], "not pixels"),
            ([0.5, 0.5, 0.2, 0.9], "x0 < x1"),
            ([0, 0, 1], "four numbers"),
            ([0, 0, 0.001, 0.5], "at least 8 px"),
            (["a", 0, 1, 1], "four numbers"),
        ],
    )
    def test_bad_boxes_say_why(self, street: Image.Image, box: list, reason: str) -> None:
        with pytest.raises(ImageOpError, match=reason):
            crop(street, box)


class TestRotate:
    def test_quarter_turn_with_expand_swaps_sides(self, street: Image.Image) -> None:
        out = rotate(street, 90, expand=True)
        assert out.size == (671, 1280)
        # counter-clockwise: the photo's top-right corner lands at the top-left
        assert (
            np.abs(
                np.asarray(out)[:20, :20].astype(int)
                - np.asarray(street)[:20, -20:].transpose(1, 0, 2)[::-1].astype(int)
            ).mean()
            < 3
        )

    def test_without_expand_keeps_the_frame(self, street: Image.Image) -> None:
        out = rotate(street, 30, expand=False)
        assert out.size == street.size
        assert np.asarray(out)[0, 0].tolist() == [0, 0, 0]  # corner filled black

    def test_refuses_absurd_angles(self, street: Image.Image) -> None:
        with pytest.raises(ImageOpError, match="between -360 and 360"):
            rotate(street, 1e9)


class TestAuxiliaryLines:
    def test_draws_only_where_asked(self, street: Image.Image) -> None:
        out = auxiliary_lines(street, lines=[[0, 0.5, 1, 0.5]], color="red")
        diff = np.abs(np.asarray(out, dtype=int) - np.asarray(street, dtype=int)).sum(axis=2)
        rows = np.nonzero(diff.any(axis=1))[0]
        assert rows.min() >= 330 and rows.max() <= 341  # a horizontal line at y = 335
        assert tuple(np.asarray(out)[335, 640]) == (230, 25, 25)

    def test_box_and_grid(self, street: Image.Image) -> None:
        out = auxiliary_lines(street, boxes=[[0.1, 0.1, 0.3, 0.3]], grid=4, color="yellow")
        px = np.asarray(out)
        assert tuple(px[round(0.1 * 671) + 1, 200]) == (255, 220, 0)  # top edge of the box
        assert tuple(px[100, 320]) == (255, 255, 255)  # the first grid line at x = w/4

    def test_needs_something_to_draw(self, street: Image.Image) -> None:
        with pytest.raises(ImageOpError, match="at least one"):
            auxiliary_lines(street)


class TestSuperResolution:
    def test_two_and_four_times_a_region(self, street: Image.Image) -> None:
        assert super_resolution(street, [0.7, 0.85, 0.9, 1.0], 2).size == (512, 202)
        assert super_resolution(street, [0.7, 0.85, 0.9, 1.0], 4).size == (1024, 404)

    def test_sharper_than_plain_bicubic(self, street: Image.Image) -> None:
        box = [0.6, 0.5, 0.9, 0.8]  # the car
        ours = super_resolution(street, box, 2)
        region = crop(street, box)
        plain = region.resize(ours.size, Image.Resampling.BICUBIC)

        def sharpness(im: Image.Image) -> float:
            return float(np.asarray(im.convert("L").filter(ImageFilter.FIND_EDGES), dtype=float).mean())

        assert sharpness(ours) > 1.1 * sharpness(plain)

    def test_refuses_factor_three_and_huge_output(self, street: Image.Image) -> None:
        with pytest.raises(ImageOpError, match="2 or 4"):
            super_resolution(street, factor=3)
        with pytest.raises(ImageOpError, match="smaller box"):
            super_resolution(street, [0, 0, 1, 1], 4)

    def test_deterministic(self, street: Image.Image) -> None:
        a = super_resolution(street, [0.1, 0.1, 0.4, 0.4], 2).tobytes()
        assert a == super_resolution(street, [0.1, 0.1, 0.4, 0.4], 2).tobytes()


class TestPixelAnalysis:
    def test_street_has_trees_and_no_sky(self, street: Image.Image) -> None:
        stats = pixel_analysis(street)
        assert stats["vegetation_fraction"] > 0.15
        assert stats["sky_fraction"] < 0.05
        assert abs(sum(stats["hue_histogram"].values()) - (1 - 0)) <= 1.0
        assert sum(c["share"] for c in stats["dominant_colours"]) == pytest.approx(1.0, abs=0.01)

    def test_overcast_sky_band_is_sky(self, town: Image.Image) -> None:
        sky = pixel_analysis(town, [0, 0, 1, 0.06])
        assert sky["sky_fraction"] > 0.8
        assert sky["edge_density"] < pixel_analysis(town, [0, 0.3, 1, 0.7])["edge_density"]

    def test_road_is_flat_grey_without_vegetation(self, street: Image.Image) -> None:
        road = pixel_analysis(street, [0.1, 0.8, 0.6, 1.0])
        tree_band = pixel_analysis(street, [0.3, 0.1, 0.7, 0.5])
        assert road["vegetation_fraction"] < 0.05
        assert road["saturation"] < tree_band["saturation"]
        assert tree_band["vegetation_fraction"] > 0.4
        assert any("grey" in c["name"] for c in road["dominant_colours"][:2])

    def test_colour_names(self) -> None:
        assert colour_name((250, 250, 250)) == "white"
        assert colour_name((10, 10, 10)) == "black"
        assert colour_name((200, 30, 30)) == "red"
        assert colour_name((30, 60, 200)) == "blue"
        assert colour_name((40, 160, 40)) == "green"
        assert colour_name((120, 70, 20)) == "brown"


class TestTilt:
    def test_level_photos_read_small(self, load_photo) -> None:
        for name in ("level1-1.jpg", "level1-34.jpg", "level2-3.jpg"):
            assert abs(estimate_tilt(load_photo(name))[0]) < 2.5

    def test_known_roll_is_recovered(self, load_photo) -> None:
        im = load_photo("level1-34.jpg")
        w, h = im.size
        rolled = im.rotate(8, resample=Image.Resampling.BICUBIC).crop((w // 7, h // 7, w - w // 7, h - h // 7))
        tilt, support = estimate_tilt(rolled)
        assert -11 < tilt < -5 and support > 0.05  # rotate(-8) levels it


class TestFixedPolicy:
    def test_level_photo_gives_full_plus_ten_enlarged_crops(self, street: Image.Image) -> None:
        views = fixed_policy_views(street)
        assert all(isinstance(v, PolicyView) for v in views)
        assert [v.tool for v in views] == ["original"] + ["super_resolution"] * 10
        assert views[0].label == "full" and views[0].image.size == street.size
        assert views[1].label == "top-left crop 0.8 + 2x SR"
        assert views[1].image.size == (2048, 1074)
        assert views[-1].label == "centre crop 0.6 + 2x SR" and views[-1].args["box"] == [0.2, 0.2, 0.8, 0.8]
        assert len({v.label for v in views}) == 11

    def test_views_show_the_region_they_name(self, street: Image.Image) -> None:
        for view in fixed_policy_views(street)[1:]:
            expected = crop(street, view.args["box"]).resize(view.image.size, Image.Resampling.BILINEAR)
            diff = np.abs(np.asarray(view.image, dtype=int) - np.asarray(expected, dtype=int)).mean()
            assert diff < 12, view.label

    def test_rolled_photo_is_levelled_first(self, load_photo) -> None:
        im = load_photo("level1-34.jpg")
        rolled = im.rotate(8, resample=Image.Resampling.BICUBIC)
        views = fixed_policy_views(rolled)
        assert views[1].tool == "rotate" and -11 < views[1].args["degrees"] < -5
        assert all(v.args.get("rotated_degrees") == views[1].args["degrees"] for v in views[2:])
        assert len(views) == 12

    def test_seven_views_are_searched_the_levelled_one_first(self, load_photo, street: Image.Image) -> None:
        level = searched_views(fixed_policy_views(street))
        assert [v.label.split(" +")[0] for v in level] == [
            "full", *(f"{p} crop 0.8" for p in ("top-left", "top-right", "bottom-left", "bottom-right", "centre")),
            "centre crop 0.6",
        ]  # fmt: skip
        rolled = fixed_policy_views(load_photo("level1-34.jpg").rotate(8, resample=Image.Resampling.BICUBIC))
        searched = searched_views(rolled)
        assert len(searched) == 7 and searched[0].tool == "rotate" and all(v.tool != "original" for v in searched)

    def test_crop_boxes(self) -> None:
        boxes = dict(crop_boxes(0.6))
        assert boxes["bottom-right"] == (0.4, 0.4, 1.0, 1.0)
        assert boxes["centre"] == (0.2, 0.2, 0.8, 0.8)
