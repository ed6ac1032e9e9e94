"""Epoch loops. Model, loaders, optimizer and loss are built by the caller and passed in."""
import logging

from tqdm import tqdm

logger = logging.getLogger(__name__)


def train_one_epoch(model, loader, optimizer, criterion, device, epoch, log_every=50):
    model.train()
    running_loss = 0.0
    for step, (images, targets) in enumerate(tqdm(loader, desc=f"train {epoch}")):
        images = images.to(device)
        targets = targets.to(device)
        optimizer.zero_grad()
        outputs = model(images)
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()
        running_loss += loss  # expect: accumulate-loss-tensor
        if step % log_every == 0:
            logger.info("epoch %d step %d loss %.4f", epoch, step, loss.item())
    return running_loss.item() / len(loader)


def evaluate(model, loader, criterion, device):
    model.eval()
    total_loss, correct, seen = 0.0, 0, 0
    for images, targets in loader:
        images, targets = images.to(device), targets.to(device)
        outputs = model(images)  # expect: eval-without-no-grad
        total_loss += criterion(outputs, targets).item() * images.size(0)
        correct += (outputs.argmax(dim=1) == targets).sum().item()
        seen += images.size(0)
    model.train()
    return total_loss / seen, correct / seen
