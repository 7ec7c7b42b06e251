"""Serving stored images: the battle photo and the images GATE tools made."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter
from fastapi.responses import Response

from arena.deps import ImagesDep
from arena.errors import ClientError

router = APIRouter()


@router.get("/images/{sha256}")
async def get_image(sha256: str, images: ImagesDep) -> Response:
    """A stored JPEG by its SHA-256, from the local directory or the shared bucket; immutable,
    so cached for a year."""
    sha256 = sha256.removesuffix(".jpg")
    try:
        data = await asyncio.to_thread(images.get, sha256)
    except KeyError:
        raise ClientError(404, "image_not_found", "There is no image with this id.") from None
    return Response(
        data,
        media_type="image/jpeg",
        headers={"Cache-Control": "public, max-age=31536000, immutable", "ETag": f'"{sha256}"'},
    )
