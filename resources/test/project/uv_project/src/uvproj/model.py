import torch as th


class Block(th.nn.Module):
    def __init__(self, d: int = 32):
        super().__init__()
        self.proj = th.nn.Linear(d, d)


class Tower(Block):
    pass
