import argparse

import torch
import torch.nn.functional as F

from model import Model

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def train(opt, loader):
    model = Model(opt.num_class)
    # Every script wraps the model the same way, so the saved keys (`module.`) match.
    model = torch.nn.DataParallel(model).to(device)
    model.train()
    if opt.saved_model != "":
        model.load_state_dict(torch.load(opt.saved_model, map_location=device))
    optimizer = torch.optim.Adam(model.parameters(), lr=opt.lr)
    best_loss = float("inf")
    for iteration, (images, labels) in enumerate(loader):
        preds = model(images.to(device))
        loss = F.cross_entropy(preds, labels.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if loss.item() < best_loss:
            best_loss = loss.item()
            torch.save(model.state_dict(), f"./saved_models/{opt.exp_name}/best_accuracy.pth")  # ok
        if (iteration + 1) % 100000 == 0:
            torch.save(
                model.state_dict(), f"./saved_models/{opt.exp_name}/iter_{iteration+1}.pth")  # ok


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--exp_name", default="run")
    parser.add_argument("--saved_model", default="")
    parser.add_argument("--num_class", type=int, default=10)
    parser.add_argument("--lr", type=float, default=1e-3)
    train(parser.parse_args(), [])
