import argparse

import torch

from model import Model

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def test(opt, loader):
    model = Model(opt.num_class)
    model = torch.nn.DataParallel(model).to(device)
    model.load_state_dict(torch.load(opt.saved_model, map_location=device))
    model.eval()
    correct = 0
    with torch.no_grad():
        for images, labels in loader:
            correct += (model(images.to(device)).argmax(1) == labels.to(device)).sum().item()
    return correct


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--saved_model", required=True)
    parser.add_argument("--num_class", type=int, default=10)
    print(test(parser.parse_args(), []))
