import torch
from torch.profiler import profile, ProfilerActivity
from uvproj.model import Block

if __name__ == "__main__":
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        Block()(torch.randn(4, 32))
    print(prof.key_averages().table())
