import torch

from lib.backbones import get_backbone
from lib.nets import ContrastiveNet


def embed(loader, net):
    out = []
    with torch.no_grad():
        for x, _ in loader:
            out.append(net(x)[0])
    return torch.cat(out)


if __name__ == "__main__":
    encoder = get_backbone("resnet50")
    net = ContrastiveNet(encoder, 2048)
    net.load_state_dict(torch.load("checkpoint_100.pt", weights_only=True))
    net.eval()
    loader = torch.utils.data.DataLoader(torch.load("test_set.pt", weights_only=True), batch_size=256)
    torch.save(embed(loader, net), "embeddings.pt")
