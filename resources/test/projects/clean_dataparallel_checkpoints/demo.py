import argparse

import torch

from model import Model

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def demo(opt, images):
    model = Model(opt.num_class)
    model = torch.nn.DataParallel(model).to(device)
    print("loading pretrained model from %s" % opt.saved_model)
    model.load_state_dict(torch.load(opt.saved_model, map_location=device))
    model.eval()
    with torch.no_grad():
        return model(images.to(device)).argmax(1)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--saved_model", required=True)
    parser.add_argument("--num_class", type=int, default=10)
    demo(parser.parse_args(), torch.zeros(1, 1, 28, 28))
