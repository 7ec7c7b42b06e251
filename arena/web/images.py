"""Serving stored images: the battle photo and the images GATE tools made."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import FileResponse

from arena.deps import ImagesDep
from arena.errors import ClientError

router = APIRouter()


@router.get("/images/{sha256}")
async def get_image(sha256: str, images: ImagesDep) -> FileResponse:
    """A stored JPEG by its SHA-256; immutable, so cached for a year."""
    sha256 = sha256.removesuffix(".jpg")
    try:
        path = images.path(sha256)
    except KeyError:
        raise ClientError(404, "image_not_found", "There is no image with this id.") from None
    return FileResponse(path, media_type="image/jpeg", headers={"Cache-Control": "public, max-age=31536000, immutable"})
