#!/usr/bin/env python3
"""Generate the benchmark checkpoint set without torch (Python standard library only).

Writes files in torch's zip serialization format (see shared spec checkpoints.md section 1.1):
a protocol-2 `data.pkl` whose storages are persistent ids
`("storage", torch.<T>Storage, key, "cpu", numel)` and whose tensors are
`torch._utils._rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict())`,
records `.format_version`, `.storage_alignment`, `byteorder`, `data/<key>`, `version`,
`.data/serialization_id`, every record stored (no compression) and 64-byte aligned through an
"FB" extra field in the local header. A few files use the legacy non-zip format.

The pickles are produced by the standard `pickle.Pickler` (as torch does), with stand-in
objects registered under the names `torch`, `torch._utils` inside this process only: nothing is
imported from torch and nothing is ever unpickled. Tensor bytes are a deterministic pattern of
small float32 values, so every run produces the same files.

Layout under OUT:
  small/ckpt-NNNN.pt   many tiny state_dicts / training checkpoints (default 1000)
  medium/*.pt          a ResNet-50-like state_dict (~100 MB) and a training checkpoint with
                       Adam state (~60 MB)
  large/llm-1g.pt      a ~1 GB bf16 decoder state_dict with tied embeddings (shared storage)
  unsafe/*             a few files whose pickle calls builtins.eval('1+1') (harmless; never
                       loaded by anything here), a legacy-format file and a raw pickle
  bomb/zip-bomb-*.pt   a torch zip whose data.pkl inflates to 1 GiB of zeros (128 MiB with
                       --no-large): ~1 MB on disk, invalid from its first byte
"""

from __future__ import annotations

import argparse
import array
import collections
import hashlib
import io
import os
import pickle
import random
import struct
import sys
import types
import zlib

# ----------------------------------------------------------------------------------------------
# Stand-ins for the torch objects the pickle refers to by name.


def _fake_module(name: str) -> types.ModuleType:
    mod = types.ModuleType(name)
    sys.modules[name] = mod
    return mod


if "torch" in sys.modules:  # pragma: no cover - defensive: never mix with a real torch
    raise SystemExit("gen_checkpoints.py must run without torch imported")

_torch = _fake_module("torch")
_torch_utils = _fake_module("torch._utils")
_torch.__path__ = []  # type: ignore[attr-defined]  # lets "torch._utils" resolve as a submodule
_torch._utils = _torch_utils  # type: ignore[attr-defined]


def _rebuild_tensor_v2(*_args):  # never called: only pickled by reference
    raise RuntimeError("stand-in")


_rebuild_tensor_v2.__module__ = "torch._utils"
_rebuild_tensor_v2.__qualname__ = "_rebuild_tensor_v2"
_torch_utils._rebuild_tensor_v2 = _rebuild_tensor_v2  # type: ignore[attr-defined]

# dtype name -> (storage class name, element size)
DTYPES = {
    "float32": ("FloatStorage", 4),
    "float16": ("HalfStorage", 2),
    "bfloat16": ("BFloat16Storage", 2),
    "int64": ("LongStorage", 8),
}
STORAGE_TYPES = {}
for _dt, (_name, _size) in DTYPES.items():
    _cls = type(_name, (), {"__module__": "torch"})
    _cls.__qualname__ = _name
    setattr(_torch, _name, _cls)
    STORAGE_TYPES[_dt] = _cls


class Storage:
    """One storage: the bytes of `data/<key>`."""

    def __init__(self, key: str, dtype: str, numel: int):
        self.key = key
        self.dtype = dtype
        self.numel = numel

    @property
    def nbytes(self) -> int:
        return self.numel * DTYPES[self.dtype][1]


class Tensor:
    """A dense tensor over a storage; pickles like torch.Tensor.__reduce_ex__."""

    def __init__(self, storage: Storage, shape, offset: int = 0, stride=None):
        self.storage = storage
        self.shape = tuple(shape)
        self.offset = offset
        if stride is None:
            stride, acc = [], 1
            for dim in reversed(self.shape):
                stride.append(acc)
                acc *= dim
            stride = tuple(reversed(stride))
        self.stride = tuple(stride)

    def __reduce_ex__(self, _protocol):
        return (
            _rebuild_tensor_v2,
            (self.storage, self.offset, self.shape, self.stride, False, collections.OrderedDict()),
        )


class Payload:
    """A harmless stand-in for a malicious object: unpickling it would evaluate '1+1'."""

    def __reduce__(self):
        return (eval, ("1+1",))


class StorageAllocator:
    def __init__(self, legacy: bool = False):
        self.storages: list[Storage] = []
        self.legacy = legacy

    def tensor(self, shape, dtype: str = "float32") -> Tensor:
        numel = 1
        for dim in shape:
            numel *= dim
        key = str(94_000_000_000_000 + 4096 * len(self.storages)) if self.legacy else str(len(self.storages))
        storage = Storage(key, dtype, numel)
        self.storages.append(storage)
        return Tensor(storage, shape)


def _pickle(obj, legacy: bool) -> bytes:
    buf = io.BytesIO()
    pickler = pickle.Pickler(buf, protocol=2)

    def persistent_id(o):
        if isinstance(o, Storage):
            stype = STORAGE_TYPES[o.dtype]
            if legacy:
                return ("storage", stype, o.key, "cpu", o.numel, None)
            return ("storage", stype, o.key, "cpu", o.numel)
        return None

    pickler.persistent_id = persistent_id
    pickler.dump(obj)
    return buf.getvalue()


# ----------------------------------------------------------------------------------------------
# Tensor bytes: a deterministic 1 MiB block of small float32 values, rotated per storage.

_BLOCK_SIZE = 1 << 20
_rng = random.Random(20240611)
_BLOCK = array.array("f", (_rng.uniform(-0.1, 0.1) for _ in range(_BLOCK_SIZE // 4))).tobytes()
_BLOCK2 = _BLOCK + _BLOCK


def _storage_chunks(storage: Storage, index: int):
    remaining = storage.nbytes
    start = (index * 4096) % _BLOCK_SIZE
    while remaining > 0:
        n = min(remaining, _BLOCK_SIZE)
        yield _BLOCK2[start : start + n]
        remaining -= n


# ----------------------------------------------------------------------------------------------
# A minimal zip writer in torch's layout (stored records, 64-byte aligned data, no zip64).


class TorchZipWriter:
    ALIGN = 64

    def __init__(self, fh, archive: str):
        self.fh = fh
        self.archive = archive
        self.central: list[bytes] = []
        self.names: list[str] = []
        self.crc_all = 0

    def _local_header(self, name_b: bytes, crc: int, size: int, pad: int) -> bytes:
        extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
        return (
            struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0x0800, 0, 0, 0x21, crc, size, size, len(name_b), len(extra))
            + name_b
            + extra
        )

    def write_record(self, name: str, chunks, size: int) -> None:
        full = f"{self.archive}/{name}"
        name_b = full.encode()
        offset = self.fh.tell()
        base = offset + 30 + len(name_b) + 4
        pad = (-base) % self.ALIGN
        if size > 0xFFFFFFF0 or offset > 0xFFFFFFF0:
            raise SystemExit("record too large for this writer (no zip64)")
        self.fh.write(self._local_header(name_b, 0, size, pad))
        crc, written = 0, 0
        for chunk in chunks:
            crc = zlib.crc32(chunk, crc)
            written += len(chunk)
            self.fh.write(chunk)
        if written != size:
            raise SystemExit(f"size mismatch for {full}: {written} != {size}")
        end = self.fh.tell()
        self.fh.seek(offset + 14)
        self.fh.write(struct.pack("<I", crc))
        self.fh.seek(end)
        self.central.append(
            struct.pack(
                "<IHHHHHHIIIHHHHHII", 0x02014B50, 0x031E, 20, 0x0800, 0, 0, 0x21, crc, size, size,
                len(name_b), 0, 0, 0, 0, 0o100644 << 16, offset,
            )
            + name_b
        )
        self.names.append(full)
        self.crc_all = zlib.crc32(struct.pack("<I", crc), self.crc_all)

    def write_bytes(self, name: str, data: bytes) -> None:
        self.write_record(name, [data], len(data))

    def close(self) -> None:
        name_hash = int.from_bytes(hashlib.sha256("\n".join(self.names).encode()).digest()[:8], "little")
        serial = f"{name_hash % 10**20:020d}{self.crc_all:020d}".encode()
        self.write_bytes(".data/serialization_id", serial)
        cd_offset = self.fh.tell()
        for entry in self.central:
            self.fh.write(entry)
        cd_size = self.fh.tell() - cd_offset
        n = len(self.central)
        self.fh.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, n, n, cd_size, cd_offset, 0))


def write_zip_checkpoint(path: str, obj, alloc: StorageAllocator) -> int:
    archive = os.path.splitext(os.path.basename(path))[0]
    data_pkl = _pickle(obj, legacy=False)
    tmp = path + ".tmp"
    with open(tmp, "wb") as fh:
        zw = TorchZipWriter(fh, archive)
        zw.write_bytes("data.pkl", data_pkl)
        zw.write_bytes(".format_version", b"1")
        zw.write_bytes(".storage_alignment", b"64")
        zw.write_bytes("byteorder", b"little")
        for i, st in enumerate(alloc.storages):
            zw.write_record(f"data/{st.key}", _storage_chunks(st, i), st.nbytes)
        zw.write_bytes("version", b"3\n")
        zw.close()
    os.replace(tmp, path)
    return os.path.getsize(path)


def write_zip_bomb(path: str, mib: int) -> int:
    """A torch zip whose data.pkl is `mib` MiB of zeros, deflated (about 1 KiB per MiB): it fails
    at its first byte, so a scanner that inflates before reading pays for nothing."""
    archive = os.path.splitext(os.path.basename(path))[0]
    name = f"{archive}/data.pkl".encode()
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = bytes(1 << 20)
    block = comp.compress(chunk) + comp.flush(zlib.Z_SYNC_FLUSH)
    # Every later MiB compresses to the same bytes: repeat them instead of compressing again.
    steady = comp.compress(chunk) + comp.flush(zlib.Z_SYNC_FLUSH)
    body = block + steady * (mib - 1) + comp.flush(zlib.Z_FINISH)
    crc = 0
    for _ in range(mib):
        crc = zlib.crc32(chunk, crc)
    size = mib << 20
    entries = []
    with open(path, "wb") as fh:
        for n, data, method, c, usize in ((name, body, 8, crc, size), (f"{archive}/version".encode(), b"3\n", 0, zlib.crc32(b"3\n"), 2)):
            off = fh.tell()
            fh.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 0x21, c, len(data), usize, len(n), 0) + n)
            fh.write(data)
            entries.append(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 0x031E, 20, 0, method, 0, 0x21, c, len(data), usize,
                                       len(n), 0, 0, 0, 0, 0o100644 << 16, off) + n)
        cd = fh.tell()
        for e in entries:
            fh.write(e)
        fh.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries), fh.tell() - cd, cd, 0))
    return os.path.getsize(path)


def write_legacy_checkpoint(path: str, obj, alloc: StorageAllocator) -> int:
    with open(path, "wb") as fh:
        for head in (
            0x1950A86A20F9469CFC6C,
            1001,
            {"protocol_version": 1001, "little_endian": True, "type_sizes": {"short": 2, "int": 4, "long": 4}},
        ):
            fh.write(pickle.dumps(head, protocol=2))
        fh.write(_pickle(obj, legacy=True))
        keys = sorted(st.key for st in alloc.storages)
        fh.write(pickle.dumps(keys, protocol=2))
        by_key = {st.key: (i, st) for i, st in enumerate(alloc.storages)}
        for key in keys:
            i, st = by_key[key]
            fh.write(struct.pack("<q", st.numel))
            for chunk in _storage_chunks(st, i):
                fh.write(chunk)
    return os.path.getsize(path)


# ----------------------------------------------------------------------------------------------
# Model shapes.


def _state_dict(alloc, entries, metadata_prefixes=()):
    sd = collections.OrderedDict()
    for name, shape, dtype in entries:
        sd[name] = alloc.tensor(shape, dtype)
    meta = collections.OrderedDict((p, {"version": 1}) for p in ("",) + tuple(metadata_prefixes))
    sd._metadata = meta  # type: ignore[attr-defined]  # as nn.Module.state_dict() does
    return sd


def small_model(alloc, rng: random.Random):
    layers = rng.randint(2, 6)
    width = rng.choice([8, 16, 32, 64])
    entries, prefixes = [], []
    fan_in = rng.choice([4, 8, 16])
    for i in range(layers):
        prefixes.append(f"layers.{i}")
        entries.append((f"layers.{i}.weight", (width, fan_in), "float32"))
        entries.append((f"layers.{i}.bias", (width,), "float32"))
        fan_in = width
        if rng.random() < 0.3:
            prefixes.append(f"norms.{i}")
            entries += [
                (f"norms.{i}.weight", (width,), "float32"),
                (f"norms.{i}.bias", (width,), "float32"),
                (f"norms.{i}.running_mean", (width,), "float32"),
                (f"norms.{i}.running_var", (width,), "float32"),
                (f"norms.{i}.num_batches_tracked", (), "int64"),
            ]
    entries.append(("head.weight", (rng.choice([2, 10]), fan_in), "float32"))
    return _state_dict(alloc, entries, prefixes)


def adam_state(alloc, sd):
    params = [k for k, t in sd.items() if t.storage.dtype == "float32"]
    state = {}
    for i, name in enumerate(params):
        shape = sd[name].shape
        state[i] = {
            "step": alloc.tensor((), "float32"),
            "exp_avg": alloc.tensor(shape, "float32"),
            "exp_avg_sq": alloc.tensor(shape, "float32"),
        }
    groups = [{
        "lr": 0.001, "betas": (0.9, 0.999), "eps": 1e-08, "weight_decay": 0.01, "amsgrad": False,
        "foreach": None, "maximize": False, "capturable": False, "differentiable": False,
        "fused": None, "params": list(range(len(params))),
    }]
    return {"state": state, "param_groups": groups}


def training_checkpoint(alloc, sd, epoch: int):
    return {
        "epoch": epoch,
        "global_step": epoch * 1000,
        "model_state_dict": sd,
        "optimizer_state_dict": adam_state(alloc, sd),
        "scheduler_state_dict": {"last_epoch": epoch, "_step_count": epoch + 1, "base_lrs": [0.001]},
        "hyper_parameters": {"lr": 0.001, "batch_size": 64, "arch": "mlp"},
    }


def resnet50_like(alloc):
    entries, prefixes = [], []

    def conv(name, cout, cin, k):
        entries.append((f"{name}.weight", (cout, cin, k, k), "float32"))
        prefixes.append(name)

    def bn(name, c):
        prefixes.append(name)
        entries.extend([
            (f"{name}.weight", (c,), "float32"), (f"{name}.bias", (c,), "float32"),
            (f"{name}.running_mean", (c,), "float32"), (f"{name}.running_var", (c,), "float32"),
            (f"{name}.num_batches_tracked", (), "int64"),
        ])

    conv("conv1", 64, 3, 7)
    bn("bn1", 64)
    cin = 64
    for li, (blocks, width) in enumerate([(3, 64), (4, 128), (6, 256), (3, 512)], start=1):
        for b in range(blocks):
            p = f"layer{li}.{b}"
            conv(f"{p}.conv1", width, cin, 1)
            bn(f"{p}.bn1", width)
            conv(f"{p}.conv2", width, width, 3)
            bn(f"{p}.bn2", width)
            conv(f"{p}.conv3", width * 4, width, 1)
            bn(f"{p}.bn3", width * 4)
            if b == 0:
                conv(f"{p}.downsample.0", width * 4, cin, 1)
                bn(f"{p}.downsample.1", width * 4)
            cin = width * 4
    entries.append(("fc.weight", (1000, 2048), "float32"))
    entries.append(("fc.bias", (1000,), "float32"))
    return _state_dict(alloc, entries, prefixes)


def decoder_like(alloc, layers, hidden, inter, vocab, dtype, tied=True):
    entries, prefixes = [("model.embed_tokens.weight", (vocab, hidden), dtype)], ["model.embed_tokens"]
    for i in range(layers):
        p = f"model.layers.{i}"
        prefixes += [p, f"{p}.self_attn", f"{p}.mlp"]
        for proj in ("q_proj", "k_proj", "v_proj", "o_proj"):
            entries.append((f"{p}.self_attn.{proj}.weight", (hidden, hidden), dtype))
        entries.append((f"{p}.mlp.gate_proj.weight", (inter, hidden), dtype))
        entries.append((f"{p}.mlp.up_proj.weight", (inter, hidden), dtype))
        entries.append((f"{p}.mlp.down_proj.weight", (hidden, inter), dtype))
        entries.append((f"{p}.input_layernorm.weight", (hidden,), dtype))
        entries.append((f"{p}.post_attention_layernorm.weight", (hidden,), dtype))
    entries.append(("model.norm.weight", (hidden,), dtype))
    sd = _state_dict(alloc, entries, prefixes)
    if tied:
        emb = sd["model.embed_tokens.weight"]
        sd["lm_head.weight"] = Tensor(emb.storage, emb.shape)  # tied weights: one shared storage
    return sd


# ----------------------------------------------------------------------------------------------


def generate(out: str, n_small: int, large: bool, log) -> dict:
    os.makedirs(out, exist_ok=True)
    manifest = {"files": []}

    def record(kind, path, size):
        manifest["files"].append({"kind": kind, "path": os.path.relpath(path, out), "bytes": size})

    rng = random.Random(7)
    small_dir = os.path.join(out, "small")
    os.makedirs(small_dir, exist_ok=True)
    for i in range(n_small):
        alloc = StorageAllocator()
        sd = small_model(alloc, rng)
        obj = training_checkpoint(alloc, sd, i % 50) if i % 4 == 3 else sd
        path = os.path.join(small_dir, f"ckpt-{i:04d}.pt")
        record("small", path, write_zip_checkpoint(path, obj, alloc))
    log(f"  small: {n_small} files")

    med = os.path.join(out, "medium")
    os.makedirs(med, exist_ok=True)
    alloc = StorageAllocator()
    path = os.path.join(med, "resnet50-like.pt")
    record("medium", path, write_zip_checkpoint(path, resnet50_like(alloc), alloc))
    alloc = StorageAllocator()
    sd = decoder_like(alloc, layers=4, hidden=256, inter=688, vocab=8000, dtype="float32")
    path = os.path.join(med, "decoder-train-ckpt.pt")
    record("medium", path, write_zip_checkpoint(path, training_checkpoint(alloc, sd, 3), alloc))
    log("  medium: 2 files")

    uns = os.path.join(out, "unsafe")
    os.makedirs(uns, exist_ok=True)
    for j in range(3):
        alloc = StorageAllocator()
        sd = small_model(alloc, rng)
        obj = {"state_dict": sd, "extra": Payload()}
        path = os.path.join(uns, f"eval-payload-{j}.pt")
        record("unsafe", path, write_zip_checkpoint(path, obj, alloc))
    alloc = StorageAllocator(legacy=True)
    path = os.path.join(uns, "legacy-format.pt")
    record("unsafe", path, write_legacy_checkpoint(path, {"model": small_model(alloc, rng), "x": Payload()}, alloc))
    alloc = StorageAllocator(legacy=True)
    path = os.path.join(out, "medium", "legacy-format-benign.pt")
    record("medium", path, write_legacy_checkpoint(path, resnet50_like(alloc), alloc))
    path = os.path.join(uns, "raw-pickle.pkl")
    with open(path, "wb") as fh:
        fh.write(pickle.dumps({"config": {"lr": 0.1}, "x": Payload()}, protocol=4))
    record("unsafe", path, os.path.getsize(path))
    log("  unsafe: 5 files, medium legacy: 1 file")

    bomb = os.path.join(out, "bomb")
    os.makedirs(bomb, exist_ok=True)
    mib = 1024 if large else 128
    path = os.path.join(bomb, f"zip-bomb-{mib}m.pt")
    record("bomb", path, write_zip_bomb(path, mib))
    log(f"  bomb: data.pkl of {mib} MiB of zeros, {os.path.getsize(path) / 1e6:.1f} MB on disk")

    if large:
        big = os.path.join(out, "large")
        os.makedirs(big, exist_ok=True)
        alloc = StorageAllocator()
        sd = decoder_like(alloc, layers=16, hidden=1536, inter=4096, vocab=32000, dtype="bfloat16")
        path = os.path.join(big, "llm-1g.pt")
        record("large", path, write_zip_checkpoint(path, sd, alloc))
        log(f"  large: {os.path.getsize(path) / 1e9:.2f} GB")
    return manifest


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--small", type=int, default=1000, help="number of small checkpoints (default 1000)")
    ap.add_argument("--no-large", action="store_true", help="skip the ~1 GB checkpoint")
    args = ap.parse_args(argv)
    import json

    manifest = generate(args.out, args.small, not args.no_large, lambda m: print(m, file=sys.stderr))
    with open(os.path.join(args.out, "manifest.json"), "w") as fh:
        json.dump(manifest, fh, indent=1)
    total = sum(f["bytes"] for f in manifest["files"])
    print(f"wrote {len(manifest['files'])} checkpoints, {total / 1e6:.1f} MB, under {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
