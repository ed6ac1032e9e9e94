import torch
import torch as th

state = torch.load("ckpt.pt")
other = th.load("other.pt")  # noqa: TV007
third = th.load("third.pt")  # noqa: torch-load-without-weights-only
kept = torch.load("kept.pt")  # noqa: some-other-rule
