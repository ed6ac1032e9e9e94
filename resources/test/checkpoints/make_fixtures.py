"""Generate the small checkpoints used by torchvet_checkpoint's tests.

Written for this repository. Run once with torch, numpy and safetensors installed:

    python make_fixtures.py            # writes next to this script

File name prefixes state the expected scan verdict:
  benign_*    safe       (only names from torch's weights_only allowlist)
  unsafe_*    unsafe     (names outside the allowlist that do not run code)
  mal_*       dangerous  (a call that would run; the payload is always a harmless `print`)
  bad_*       malformed

Malicious fixtures are built by hand-writing pickle bytes or by patching archives; none of them
is ever loaded here. Every payload is `print("torchvet fixture")`.
"""

import io
import os
import pickle
import struct
import sys
import tarfile
import zipfile
import zlib

import numpy as np
import torch
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
MSG = "torchvet fixture"


def out(name):
    return os.path.join(HERE, name)


def arange(shape, dtype=torch.float32):
    n = 1
    for d in shape:
        n *= d
    return torch.arange(n, dtype=torch.float64).reshape(shape).to(dtype)


class Payload:
    """An object whose unpickling calls print (harmless stand-in for os.system)."""

    def __reduce__(self):
        return (print, (MSG,))


def zip_pickle(path):
    """(archive prefix, data.pkl bytes) of a torch zip checkpoint."""
    with zipfile.ZipFile(path) as z:
        name = [n for n in z.namelist() if n.endswith("/data.pkl")][0]
        return name.split("/")[0], z.read(name)


def patch_member(path, dst, member_suffix, fn):
    """Copy a zip byte for byte, letting fn rewrite the bytes of one member's local record."""
    data = bytearray(open(path, "rb").read())
    with zipfile.ZipFile(path) as z:
        info = [i for i in z.infolist() if i.filename.endswith(member_suffix)][0]
    fn(data, info)
    open(dst, "wb").write(bytes(data))


def main():
    torch.manual_seed(0)

    # ---------------- benign ----------------
    lin = torch.nn.Linear(4, 3)
    with torch.no_grad():
        lin.weight.copy_(arange((3, 4)))
        lin.bias.copy_(arange((3,)))
    torch.save(lin.state_dict(), out("benign_linear.pt"))

    emb = arange((5, 4))
    torch.save({"embed.weight": emb, "lm_head.weight": emb}, out("benign_tied.pt"))

    base = arange((4, 6))
    torch.save(
        {"transposed": base.t(), "row_slice": base[1:3], "col_slice": base[:, 2:5], "scalar": torch.tensor(7.0)},
        out("benign_views.pt"),
    )

    torch.save(
        {
            "f16": arange((2, 3), torch.float16),
            "bf16": arange((2, 3), torch.bfloat16),
            "f64": arange((2, 3), torch.float64),
            "i64": arange((2, 3), torch.int64),
            "i8": arange((2, 3), torch.int8),
            "u8": arange((2, 3), torch.uint8),
            "b": arange((2, 3)) > 2,
            "c64": torch.complex(arange((2,)), arange((2,))),
            "u16": arange((2, 3), torch.uint16),
            "f8": arange((2, 3), torch.float8_e4m3fn),
        },
        out("benign_dtypes.pt"),
    )

    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
    model(torch.ones(1, 4)).sum().backward()
    opt.step()
    sched.step()
    torch.save(
        {
            "epoch": 3,
            "step": 1200,
            "model_state_dict": model.state_dict(),
            "optimizer_state_dict": opt.state_dict(),
            "scheduler_state_dict": sched.state_dict(),
            "hparams": {"lr": 1e-3, "batch_size": 32, "name": "tiny"},
            "best_acc": 0.75,
        },
        out("benign_training_checkpoint.pt"),
    )

    torch.save(lin.state_dict(), out("benign_legacy.pt"), _use_new_zipfile_serialization=False)
    torch.save(lin.state_dict(), out("benign_protocol4.pt"), pickle_protocol=4)
    # Recompress a copy with deflate (torch reads it fine).
    with zipfile.ZipFile(out("benign_linear.pt")) as src, zipfile.ZipFile(
        out("benign_linear_deflated.pt"), "w", compression=zipfile.ZIP_DEFLATED
    ) as dst:
        for i in src.infolist():
            dst.writestr(i.filename, src.read(i.filename))

    save_file({"w": arange((2, 2)), "b": arange((2,))}, out("benign_weights.safetensors"))
    np.save(out("benign_array.npy"), np.arange(6, dtype=np.float32).reshape(2, 3))
    torch.save({"big": arange((2, 2), torch.complex128), "q": torch.quantize_per_tensor(arange((4,)), 0.5, 0, torch.qint8)}, out("benign_unconvertible.pt"))

    scripted = torch.jit.script(torch.nn.Linear(2, 2))
    torch.jit.save(scripted, out("benign_torchscript.pt"))

    # ---------------- unsafe (needs trust, runs no code) ----------------
    torch.save(torch.nn.Linear(2, 2), out("unsafe_full_module.pt"))
    torch.save({"w": torch.ones(2), "np_scalar": np.float64(1.5)}, out("unsafe_numpy_scalar.pt"))
    np.save(out("unsafe_object_array.npy"), np.array([{"a": 1}, [1, 2]], dtype=object), allow_pickle=True)

    # ---------------- dangerous ----------------
    torch.save({"w": torch.ones(2), "x": Payload()}, out("mal_reduce_print.pt"))
    torch.save({"w": torch.ones(2), "x": Payload()}, out("mal_reduce_print_protocol4.pt"), pickle_protocol=4)

    # C4: CRC of data.pkl wrong in the central directory (torch/miniz do not check it)
    src = out("mal_reduce_print.pt")
    raw = bytearray(open(src, "rb").read())
    # Find the central entry of data.pkl and corrupt its CRC (miniz/torch do not check it).
    pos = 0
    while True:
        pos = raw.find(b"PK\x01\x02", pos)
        if pos < 0:
            break
        nlen = struct.unpack_from("<H", raw, pos + 28)[0]
        name = bytes(raw[pos + 46 : pos + 46 + nlen]).decode()
        if name.endswith("/data.pkl"):
            struct.pack_into("<I", raw, pos + 16, struct.unpack_from("<I", raw, pos + 16)[0] ^ 0xFFFFFFFF)
        pos += 4
    open(out("mal_crc_mismatch.pt"), "wb").write(bytes(raw))

    # C5: local header name differs from the central directory name
    raw = bytearray(open(src, "rb").read())
    pos = raw.find(b"PK\x03\x04")
    while pos >= 0:
        nlen = struct.unpack_from("<H", raw, pos + 26)[0]
        name = bytes(raw[pos + 30 : pos + 30 + nlen])
        if name.endswith(b"/data.pkl"):
            raw[pos + 30 : pos + 30 + nlen] = name.replace(b"data.pkl", b"datap.kl")
            break
        pos = raw.find(b"PK\x03\x04", pos + 4)
    open(out("mal_local_name_mismatch.pt"), "wb").write(bytes(raw))

    # C7: duplicate data.pkl, the first (read by torch) is malicious, the last is benign
    prefix, evil = zip_pickle(src)
    _, good = zip_pickle(out("benign_linear.pt"))
    with zipfile.ZipFile(out("benign_linear.pt")) as z:
        members = [(i.filename.replace("benign_linear/", prefix + "/"), z.read(i.filename)) for i in z.infolist()]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with zipfile.ZipFile(out("mal_duplicate_member.pt"), "w") as z:
            z.writestr(prefix + "/data.pkl", evil)
            for n, b in members:
                z.writestr(n, b)

    # C11: pickle glued in front of a benign zip (polyglot)
    payload = pickle.dumps(Payload(), protocol=2)
    open(out("mal_polyglot.pt"), "wb").write(payload + open(out("benign_linear.pt"), "rb").read())

    # C8: legacy format with the payload in the sys_info pickle
    legacy = io.BytesIO()
    pickle.dump(0x1950A86A20F9469CFC6C, legacy, protocol=2)
    pickle.dump(1001, legacy, protocol=2)
    pickle.dump(Payload(), legacy, protocol=2)
    pickle.dump({}, legacy, protocol=2)
    pickle.dump([], legacy, protocol=2)
    open(out("mal_legacy_sysinfo.pt"), "wb").write(legacy.getvalue())

    # O9: protocol 0 text pickle
    open(out("mal_protocol0.pkl"), "wb").write(pickle.dumps(Payload(), protocol=0))

    # C2: payload first, then a broken pickle (loader runs print before failing)
    open(out("mal_broken_after_payload.pt"), "wb").write(pickle.dumps(Payload(), protocol=2)[:-1] + b"\xff\xff")

    # C14: numpy object array whose element runs print
    np.save(out("mal_object_array.npy"), np.array([Payload()], dtype=object), allow_pickle=True)

    # C10: pre-1.0 tar format with the payload in the `pickle` member
    with tarfile.open(out("mal_legacy_tar.pt"), "w") as t:
        for name, data in [
            ("sys_info", pickle.dumps({"protocol_version": 1001, "little_endian": True}, protocol=2)),
            ("pickle", pickle.dumps(Payload(), protocol=2)),
            ("storages", pickle.dumps(0, protocol=2)),
            ("tensors", pickle.dumps(0, protocol=2)),
        ]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))

    # Nested pickle passed to torch.storage._load_from_bytes (the outer call is itself a loader)
    class Nested:
        def __reduce__(self):
            return (torch.storage._load_from_bytes, (pickle.dumps(Payload(), protocol=2),))

    torch.save({"w": torch.ones(2), "x": Nested()}, out("mal_nested_load_from_bytes.pt"))

    # C12: checkpoint inside a zip
    with zipfile.ZipFile(out("mal_nested_archive.zip"), "w") as z:
        z.write(out("mal_reduce_print.pt"), "inner/model.pt")

    # ---------------- malformed ----------------
    open(out("bad_truncated.pt"), "wb").write(open(out("benign_linear.pt"), "rb").read()[:300])
    open(out("bad_not_a_checkpoint.bin"), "wb").write(b"\x00\x01\x02 this is not a checkpoint \xfe\xff")

    print("fixtures written to", HERE, "with torch", torch.__version__, file=sys.stderr)


if __name__ == "__main__":
    main()
