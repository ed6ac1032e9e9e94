"""Generate the fixtures of the checkpoint-scan hardening work (directory walk by content, false
alarms, truncated frames, legacy trailing data, compressed archives, policy findings).

Written for this repository. Run once with torch, numpy, safetensors, py7zr and zstandard
installed (e.g. in a throw-away venv):

    python make_scan_fixtures.py                 # writes next to this script
    python make_scan_fixtures.py --out DIR       # the same files into DIR (measurements)

The prefixes state the expected verdict, as in make_fixtures.py (benign_ safe, unsafe_ unsafe,
mal_ dangerous, bad_ malformed). Payloads are a harmless `print` (or a call that is never made);
nothing written here is ever loaded. Hand-written pickles are spelled opcode by opcode.
"""

import argparse
import base64
import bz2
import io
import lzma
import os
import pickle
import struct
import sys
import zipfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
MSG = "torchvet fixture"


class Payload:
    """Unpickling calls print (a harmless stand-in for os.system)."""

    def __reduce__(self):
        return (print, (MSG,))


class CallsLen:
    """Unpickling calls len([1, 2, 3])."""

    def __reduce__(self):
        return (len, ([1, 2, 3],))


class TinyNet(torch.nn.Module):
    """A module class of this script: a whole-model save imports it by name."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.bn = torch.nn.BatchNorm2d(4)
        self.fc = torch.nn.Linear(4, 2)

    def forward(self, x):
        x = self.bn(self.conv(x)).mean((2, 3))
        return self.fc(x)


def sbu(s: bytes) -> bytes:
    """SHORT_BINUNICODE."""
    return b"\x8c" + bytes([len(s)]) + s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=HERE)
    out_dir = ap.parse_args().out
    os.makedirs(out_dir, exist_ok=True)

    def out(name):
        return os.path.join(out_dir, name)

    def write(name, data):
        with open(out(name), "wb") as fh:
            fh.write(data)

    torch.manual_seed(0)
    payload_p2 = pickle.dumps(Payload(), protocol=2)

    # ---- walk by content: names that say nothing (or lie) ----
    write("mal_protocol0_named.dill", pickle.dumps(Payload(), protocol=0))
    write("mal_pickle_named_notes.txt", payload_p2)
    with zipfile.ZipFile(out("mal_plain_zip_of_pickle.zip"), "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("payload.pkl", payload_p2)
    write("mal_no_extension", pickle.dumps(Payload(), protocol=4))
    # Junk before a torch zip: zipfile finds the end record, torch.load does not read it, and the
    # pickle inside is still what a zip-based loader runs.
    buf = io.BytesIO()
    torch.save({"w": torch.ones(2), "x": Payload()}, buf)
    write("mal_zip_after_junk.bin", b"\x00JUNK" * 20 + buf.getvalue())

    # ---- false alarms of the past ----
    net = TinyNet()
    torch.save(net, out("unsafe_legacy_whole_model.pt"), _use_new_zipfile_serialization=False)  # noqa: TV085 (the fixture is a whole-model save on purpose)
    write("unsafe_builtins_len.pkl", pickle.dumps(CallsLen(), protocol=2))
    # BUILD on a list: the unpickler raises (a list takes no state).
    write("bad_build_on_list.pkl", b"\x80\x02]q\x00(K\x01K\x02e}q\x01X\x01\x00\x00\x00aK\x01sb.")

    # ---- the miss: a truncated FRAME hiding an import of nt.system ----
    body = sbu(b"nt") + b"\x94" + sbu(b"system") + b"\x94\x93\x94" + sbu(b"echo " + MSG.encode()) + b"\x94\x85\x94R\x94."
    write("mal_truncated_frame_nt_system.pkl", b"\x80\x04\x95" + struct.pack("<Q", len(body) + 4096) + body)

    # ---- legacy format: data after the last storage ----
    lin = torch.nn.Linear(3, 2)
    buf = io.BytesIO()
    torch.save(lin.state_dict(), buf, _use_new_zipfile_serialization=False)
    legacy = buf.getvalue()
    write("mal_legacy_trailing_payload.pt", legacy + payload_p2)
    write("unsafe_legacy_trailing_data.pt", legacy + pickle.dumps(torch.nn.Linear, protocol=2))
    write("benign_legacy_state_dict.pt", legacy)

    # ---- compressed payloads and 7z ----
    write("mal_payload.pkl.bz2", bz2.compress(payload_p2))
    write("mal_payload.pkl.xz", lzma.compress(payload_p2))
    import zstandard

    write("mal_payload.pkl.zst", zstandard.ZstdCompressor().compress(payload_p2))
    buf = io.BytesIO()
    torch.save(lin.state_dict(), buf)
    benign_zip = buf.getvalue()
    write("benign_linear.pt.xz", lzma.compress(benign_zip))
    import py7zr

    with py7zr.SevenZipFile(out("mal_7z_lzma.7z"), "w", filters=[{"id": py7zr.FILTER_LZMA}]) as z:
        z.writestr(payload_p2, "model/data.pkl")
    with py7zr.SevenZipFile(out("benign_7z_lzma2.7z"), "w") as z:
        z.writestr(benign_zip, "linear.pt")

    # ---- payloads that only run later (policy findings) ----
    inner = pickle.dumps(Payload(), protocol=4)
    write("unsafe_embedded_base64_pickle.pkl", pickle.dumps({"blob": base64.b64encode(inner).decode()}, protocol=4))
    write("unsafe_embedded_hex_pickle.pkl", pickle.dumps({"blob": inner.hex()}, protocol=4))
    write("unsafe_embedded_raw_pickle.pkl", pickle.dumps({"blob": inner}, protocol=4))
    write("unsafe_exec_in_string.pkl", pickle.dumps({"hook": "__import__('os').system('echo hi')"}, protocol=2))
    from safetensors.torch import save_file

    save_file({"w": torch.ones(2)}, out("unsafe_metadata_code.safetensors"), metadata={"init": "import os; os.system('id')"})
    save_file({"w": torch.ones(2)}, out("unsafe_metadata_url.safetensors"), metadata={"weights": "https://example.invalid/w.bin"})
    # Billion laughs: each list holds the previous one three times (3^40 objects once copied).
    p = [b"\x80\x02]q\x00"]
    for i in range(40):
        p.append(b"(h\x00h\x00h\x00lq\x00")
    p.append(b".")
    write("unsafe_memo_expansion.pkl", b"".join(p))

    # ---- real checkpoints that must stay silent ----
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.LazyLinear(10)
    )
    model(torch.ones(1, 3, 8, 8))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.ones(2, 3, 8, 8)).sum().backward()
    opt.step()
    torch.save(
        {
            "model": model.state_dict(),
            "optimizer": opt.state_dict(),
            "epoch": 7,
            "args": {"arch": "resnet18", "lr": 0.1, "data": "/data/imagenet", "url": "env://"},
            "hyper_parameters": {"eval_interval": 100, "mode": "eval", "note": "model.eval() before export"},
        },
        out("benign_training_run.pt"),
    )
    torch.save(model.state_dict(), out("benign_protocol4_state_dict.pt"), pickle_protocol=4)
    save_file({"w": torch.ones(2)}, out("benign_metadata.safetensors"), metadata={"format": "pt"})
    print("scan fixtures written to", out_dir, "with torch", torch.__version__, file=sys.stderr)


if __name__ == "__main__":
    main()
