import torch

torch.save({"w": torch.zeros(2)}, "model.pt")
state = torch.load("model.pt")
EOF"""
assert old in s; s=s.replace(old,new)
open(p,'w').write(s)
