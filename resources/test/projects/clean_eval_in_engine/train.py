import argparse
import logging

import torch
from torch.utils.data import DataLoader, random_split
from torchvision import datasets, transforms

from classifier import WideNet, evaluate, train_one_epoch

log = logging.getLogger(__name__)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="data")
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--eval-every", type=int, default=200, help="validate every N steps")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO)

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.5, 0.5, 0.5), (0.25, 0.25, 0.25))])
    full = datasets.SVHN(args.data, split="train", download=True, transform=tf)
    train_set, val_set = random_split(full, [len(full) - 5000, 5000], generator=torch.Generator().manual_seed(0))
    train_loader = DataLoader(train_set, batch_size=128, shuffle=True, num_workers=4, drop_last=True)
    val_loader = DataLoader(val_set, batch_size=512, shuffle=False, num_workers=4)

    model = WideNet().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)

    def periodic_eval(step):
        if step > 0 and step % args.eval_every == 0:
            val_loss, val_acc = evaluate(model, val_loader, device)  # ok: evaluate restores train mode
            log.info("step %d val loss %.4f acc %.4f", step, val_loss, val_acc)

    for epoch in range(args.epochs):
        train_loss = train_one_epoch(model, train_loader, optimizer, device, on_step=periodic_eval)
        scheduler.step()
        val_loss, val_acc = evaluate(model, val_loader, device)
        log.info("epoch %d train %.4f val %.4f acc %.4f", epoch, train_loss, val_loss, val_acc)
    torch.save(model.state_dict(), "widenet_svhn.pt")


if __name__ == "__main__":
    main()
