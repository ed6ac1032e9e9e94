import torch

from lib.backbones import get_backbone
from lib.nets import ContrastiveNet, LinearProbe


def inference(loader, encoder_model, device):
    features, labels = [], []
    for x, y in loader:
        with torch.no_grad():
            h, _ = encoder_model(x.to(device))  # expect: missing-eval-mode
        features.append(h.cpu())
        labels.append(y)
    return torch.cat(features), torch.cat(labels)


def train_probe(probe, features, labels, epochs=10):
    optimizer = torch.optim.Adam(probe.parameters(), lr=3e-4)
    for _ in range(epochs):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(probe(features), labels)
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    device = "cuda" if torch.cuda.is_available() else "cpu"
    encoder = get_backbone("resnet18")
    model = ContrastiveNet(encoder, 512)
    model.load_state_dict(torch.load("checkpoint_100.pt", map_location=device, weights_only=True))
    model = model.to(device)
    train_loader = torch.utils.data.DataLoader(torch.load("train_set.pt", weights_only=True), batch_size=256)
    features, labels = inference(train_loader, model, device)
    train_probe(LinearProbe(512, 10), features, labels)
