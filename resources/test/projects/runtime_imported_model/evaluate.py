import argparse

import torch
import torch.nn as nn
import torchvision
import torchvision.transforms as transforms

import utils

parser = argparse.ArgumentParser()
parser.add_argument("--arch", default="small_cnn")
parser.add_argument("--weights", default="model_cifar.pt")
args = parser.parse_args()

cnn = utils.import_architecture("archs", args.arch)
test_data = torchvision.datasets.CIFAR10("data", train=False, download=True,
                                         transform=transforms.ToTensor())
test_loader = torch.utils.data.DataLoader(test_data, batch_size=64)

model = cnn.Net()
model.load_state_dict(torch.load(args.weights, map_location="cpu"))  # expect: torch-load-without-weights-only
criterion = nn.CrossEntropyLoss()

model.eval()
test_loss = 0.0
correct = 0
for data, target in test_loader:
    output = model(data)  # expect: eval-without-no-grad
    test_loss += criterion(output, target).item() * data.size(0)
    correct += (output.argmax(1) == target).sum().item()
print(test_loss / len(test_data), correct / len(test_data))

# ok: a runner object that is only switched, never called or given a state dict, is not
# taken for a module.
runner = utils.import_architecture("archs", "runner").Runner()
runner.eval()
for data, target in test_loader:
    runner.record(data, target)
