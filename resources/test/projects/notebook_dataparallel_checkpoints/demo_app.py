import sys

import torch
import torchvision
from PIL import Image
from torchvision import transforms

WEIGHTS = "flowers_demo.pth"

preprocess = transforms.Compose(
    [transforms.Resize(224), transforms.CenterCrop(224), transforms.ToTensor()]
)


def load_model():
    net = torchvision.models.resnet18(num_classes=102)
    net.load_state_dict(torch.load(WEIGHTS, map_location="cpu", weights_only=True))
    return net.eval()


def main(path):
    net = load_model()
    image = preprocess(Image.open(path).convert("RGB")).unsqueeze(0)
    with torch.no_grad():
        probs = net(image).softmax(dim=1)
    top = probs.topk(3)
    for p, i in zip(top.values[0].tolist(), top.indices[0].tolist()):
        print(f"class {i}: {p:.3f}")


if __name__ == "__main__":
    main(sys.argv[1])
