"""A request's JSON with its photos spliced in: the same bytes httpx's `json=` makes."""

from __future__ import annotations

import json

import httpx

from arena.contenders.apis.http import encode_json
from arena.contenders.base import Base64, ContenderImage
from tests.conftest import SAMPLE_DIR

PHOTO = ContenderImage(jpeg=(SAMPLE_DIR / "images" / "level1-1.jpg").read_bytes(), width=1, height=1)


def as_httpx_encodes(body: object) -> bytes:
    return httpx.Request("POST", "http://127.0.0.1/", json=body).read()


def test_photos_are_spliced_into_the_json_httpx_would_make():
    body = {
        "model": "m",
        "stream": True,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": 'Où est-ce ? 東京の写真 "quoted" \\ \x00 \u2028'},
                    {"type": "image_url", "image_url": {"url": PHOTO.data_url()}},
                ],
            },
            {"role": "user", "content": ({"data": PHOTO.base64()}, {"data": PHOTO.base64()})},
        ],
        "temperature": 0.25,
        "max_tokens": None,
    }
    encoded = bytes(encode_json(body))
    assert encoded == as_httpx_encodes(body)
    sent = json.loads(encoded)
    assert sent["messages"][0]["content"][1]["image_url"]["url"] == PHOTO.data_url()
    assert [part["data"] for part in sent["messages"][1]["content"]] == [PHOTO.base64()] * 2


def test_a_body_without_photos_is_plain_json():
    body = {"model": "m", "messages": [{"role": "user", "content": "base64: \x00base64:"}]}
    assert bytes(encode_json(body)) == as_httpx_encodes(body)


def test_only_the_marked_strings_are_spliced():
    # a prompt that is itself base64 text is an ordinary string, escaped as usual
    plain = PHOTO.base64()[:100] + '"'
    body = {"text": str(plain), "photo": Base64(PHOTO.base64()[:100])}
    assert json.loads(bytes(encode_json(body))) == {"text": plain, "photo": PHOTO.base64()[:100]}
    assert bytes(encode_json(body)) == as_httpx_encodes(body)


def test_the_photo_is_encoded_once():
    assert PHOTO.base64() is PHOTO.base64() and PHOTO.data_url() is PHOTO.data_url()
    assert PHOTO.data_url() == "data:image/jpeg;base64," + PHOTO.base64()
