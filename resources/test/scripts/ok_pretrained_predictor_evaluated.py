"""Dog breed classifier: the pretrained detector is evaluated by the same helper first."""
import torch
import torch.nn as nn
import torchvision.models as models
import torchvision.transforms as transforms
from PIL import Image

use_cuda = torch.cuda.is_available()
vgg16 = models.vgg16(weights=models.VGG16_Weights.DEFAULT)
if use_cuda:
    vgg16 = vgg16.cuda()

preprocess = transforms.Compose(
    [transforms.Resize(256), transforms.CenterCrop(224), transforms.ToTensor()]
)


def vgg16_predict(img_path):
    img = preprocess(Image.open(img_path).convert("RGB")).unsqueeze(0)
    if use_cuda:
        img = img.cuda()
    with torch.no_grad():
        out = vgg16(img)
    return int(out.argmax(1))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(nn.Dropout(0.3), nn.Linear(16 * 112 * 112, 133))

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


def train(n_epochs, loaders, model, optimizer, criterion):
    for epoch in range(n_epochs):
        model.train()
        for data, target in loaders["train"]:
            if use_cuda:
                data, target = data.cuda(), target.cuda()
            optimizer.zero_grad()
            loss = criterion(model(data), target)
            loss.backward()
            optimizer.step()
    return model


def test(loaders, model, criterion):
    model.eval()
    correct = 0
    with torch.no_grad():
        for data, target in loaders["test"]:
            if use_cuda:
                data, target = data.cuda(), target.cuda()
            correct += (model(data).argmax(1) == target).sum().item()
    return correct


def main(loaders):
    model_scratch = Net()
    if use_cuda:
        model_scratch = model_scratch.cuda()
    optimizer = torch.optim.SGD(model_scratch.parameters(), lr=0.05)
    criterion = nn.CrossEntropyLoss()
    train(20, loaders, model_scratch, optimizer, criterion)
    test(loaders, model_scratch, criterion)
    test(loaders, vgg16, criterion)
    print(vgg16_predict("dog.jpg"))
