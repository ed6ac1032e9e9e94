import torch


def main():
    # The authors' released weights, read from this folder; GraphNet's folder is another
    # program, and its `model.pth` is not this file.
    model = torch.load("model.pth", map_location="cpu")  # ok
    model.eval()
    return model


if __name__ == "__main__":
    main()
