"""The image stores: a local directory and an S3-compatible bucket (moto's
server on loopback), behind one interface, and the app on each."""

from __future__ import annotations

import base64
import hashlib
import uuid
from pathlib import Path

import pytest

from arena.config import Settings
from arena.images.store import ImageStore, LocalImageStore, S3ImageStore, open_image_store
from tests.battles.test_flow import run_battle
from tests.servers.s3 import S3Server


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> ImageStore:
    if request.param == "local":
        return LocalImageStore(tmp_path / "images")
    s3: S3Server = request.getfixturevalue("s3_env")
    bucket = s3.create_bucket(f"arena-{uuid.uuid4().hex[:12]}")
    return open_image_store(f"s3://{bucket}/photos", endpoint_url=s3.endpoint_url)


class TestStore:
    def test_put_then_get_by_sha256(self, store: ImageStore, photo_bytes: bytes) -> None:
        sha = store.put(photo_bytes)
        assert sha == hashlib.sha256(photo_bytes).hexdigest()
        assert store.get(sha) == photo_bytes
        assert store.exists(sha)

    def test_missing_and_malformed_digests_are_key_errors(self, store: ImageStore) -> None:
        for sha in ("0" * 64, "../../etc/passwd", "ABC", ""):
            assert not store.exists(sha)
            with pytest.raises(KeyError):
                store.get(sha)

    def test_png_and_jpg_of_one_digest_are_apart(self, store: ImageStore) -> None:
        sha = store.put(b"not really a png", "png")
        assert store.exists(sha, "png") and not store.exists(sha, "jpg")


class TestS3Layout:
    def test_objects_sit_under_the_prefix_like_the_local_files(self, s3_env: S3Server, photo_bytes: bytes) -> None:
        bucket = s3_env.create_bucket(f"arena-{uuid.uuid4().hex[:12]}")
        store = open_image_store(f"s3://{bucket}/deploy/images/", endpoint_url=s3_env.endpoint_url)
        assert isinstance(store, S3ImageStore)
        sha = store.put(photo_bytes)
        store.put(photo_bytes)  # the same photo again is stored once
        listed = s3_env.client().list_objects_v2(Bucket=bucket)["Contents"]
        assert [o["Key"] for o in listed] == [f"deploy/images/{sha[:2]}/{sha}.jpg"]
        head = s3_env.client().head_object(Bucket=bucket, Key=listed[0]["Key"])
        assert head["ContentType"] == "image/jpeg" and head["ContentLength"] == len(photo_bytes)

    def test_a_bucket_that_does_not_exist_is_an_error_not_a_missing_image(self, s3_env: S3Server) -> None:
        store = open_image_store("s3://no-such-bucket-here", endpoint_url=s3_env.endpoint_url)
        with pytest.raises(Exception, match="NoSuchBucket"):
            store.put(b"bytes")


class TestLocations:
    def test_a_path_is_a_local_directory(self, tmp_path: Path) -> None:
        store = open_image_store(tmp_path / "x")
        assert isinstance(store, LocalImageStore) and store.root == tmp_path / "x"

    @pytest.mark.parametrize("location", ["s3://", "s3:///prefix", "gs://bucket/x"])
    def test_refuses_what_it_cannot_open(self, location: str, tmp_path: Path) -> None:
        with pytest.raises(ValueError, match="ARENA_IMAGE_STORE|bucket"):
            Settings(image_store=location, data_dir=tmp_path)

    def test_default_is_images_under_the_data_dir(self, tmp_path: Path) -> None:
        assert Settings(data_dir=tmp_path).image_location == str(tmp_path / "images")


class TestAppOnS3:
    @pytest.fixture
    def settings(self, settings: Settings, s3_env: S3Server) -> Settings:
        bucket = s3_env.create_bucket(f"arena-{uuid.uuid4().hex[:12]}")
        return settings.model_copy(
            update={"image_store": f"s3://{bucket}/arena", "s3_endpoint_url": s3_env.endpoint_url}
        )

    async def test_battle_photo_is_in_the_bucket_served_and_sent_to_contenders(
        self, client, settings: Settings, s3_env: S3Server, openai_server, photo_bytes: bytes
    ) -> None:
        _, model_server = openai_server
        before = len(model_server.requests)
        battle_id, events = await run_battle(client, photo_bytes)
        assert [name for name, _ in events][-2:] == ["ready", "end"]

        bucket = settings.image_store.removeprefix("s3://").split("/")[0]
        keys = [o["Key"] for o in s3_env.client().list_objects_v2(Bucket=bucket)["Contents"]]
        assert len(keys) == 1 and keys[0].startswith("arena/")
        stored = s3_env.client().get_object(Bucket=bucket, Key=keys[0])["Body"].read()
        assert not (settings.data_dir / "images").exists()  # nothing on this replica's disk

        sha = keys[0].rsplit("/", 1)[1].removesuffix(".jpg")
        served = await client.get(f"/images/{sha}.jpg")
        assert served.status_code == 200 and served.content == stored
        assert served.headers["content-type"] == "image/jpeg"
        assert (await client.get(f"/images/{'0' * 64}")).status_code == 404

        sent = [r for r in model_server.requests[before:] if base64.b64encode(stored).decode() in str(r)]
        assert len(sent) == 2  # both contenders got the photo from the bucket
