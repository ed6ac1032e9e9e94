import argparse

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torchvision.models import resnet50

from datasets import imagenet_split
from dist_utils import init_distributed, is_main_process
from loaders import build_loader


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--epochs", type=int, default=90)
    p.add_argument("--batch-size", type=int, default=128)
    args = p.parse_args()

    distributed, rank, local_rank, world = init_distributed()
    device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")
    train_loader, train_sampler = build_loader(imagenet_split(args.data, "train"), args.batch_size, True, distributed)
    val_loader, _ = build_loader(imagenet_split(args.data, "val"), args.batch_size, False, distributed)

    model = resnet50().to(device)
    if distributed:
        model = DDP(model, device_ids=[local_rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1 * world, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=30, gamma=0.1)

    for epoch in range(args.epochs):
        if train_sampler is not None:
            train_sampler.set_epoch(epoch)
        model.train()
        for images, labels in train_loader:
            images, labels = images.to(device, non_blocking=True), labels.to(device, non_blocking=True)
            loss = F.cross_entropy(model(images), labels)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        scheduler.step()

        model.eval()
        correct = torch.zeros(2, device=device)
        with torch.no_grad():
            for images, labels in val_loader:
                images, labels = images.to(device, non_blocking=True), labels.to(device, non_blocking=True)
                correct[0] += (model(images).argmax(1) == labels).sum()
                correct[1] += labels.numel()
        if distributed:
            dist.all_reduce(correct)
        if is_main_process():
            print(f"epoch {epoch}: top-1 {(correct[0] / correct[1]).item():.4f}")
            state = model.module.state_dict() if distributed else model.state_dict()
            torch.save(state, "resnet50_last.pt")

    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
