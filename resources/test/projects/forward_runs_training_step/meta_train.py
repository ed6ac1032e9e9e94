import torch
from torch.utils.data import DataLoader

from meta import Meta


def main(train_set, test_set, net, epochs):
    device = torch.device("cuda")
    maml = Meta(net, 1e-3, 0.01).to(device)
    for epoch in range(epochs):
        db = DataLoader(train_set, 4, shuffle=True)
        for step, (x_spt, y_spt, x_qry, y_qry) in enumerate(db):
            x_spt, y_spt, x_qry, y_qry = x_spt.to(device), y_spt.to(device), x_qry.to(device), y_qry.to(device)
            accs = maml(x_spt, y_spt, x_qry, y_qry)  # ok: Meta.forward is the meta-training step
            if step % 30 == 0:
                print("step:", step, "training acc:", accs)


def evaluate(test_set, net):
    device = torch.device("cuda")
    net.eval()
    accs = []
    for x, y in DataLoader(test_set, 32):
        out = net(x.to(device))  # expect: eval-without-no-grad
        accs.append((out.argmax(1) == y.to(device)).float().mean().item())
    return sum(accs) / len(accs)
