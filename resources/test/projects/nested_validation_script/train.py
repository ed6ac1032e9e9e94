import torch
import torch.nn as nn
import torch.optim as optim

from data import get_dataloaders
from model import SimpleCNN
from utils import plot_history

DATA_DIR = "dataset/cats_vs_dogs"
NUM_EPOCHS = 20
LEARNING_RATE = 0.001


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    print("Using device:", device)
    train_loader, val_loader, classes = get_dataloaders(DATA_DIR)

    model = SimpleCNN(num_classes=len(classes)).to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.Adam(model.parameters(), lr=LEARNING_RATE)

    train_losses, val_losses, val_accs = [], [], []
    for epoch in range(NUM_EPOCHS):
        model.train()
        running_loss = 0.0
        for images, labels in train_loader:
            images, labels = images.to(device), labels.to(device)
            optimizer.zero_grad()
            outputs = model(images)
            loss = criterion(outputs, labels)
            loss.backward()
            optimizer.step()
            running_loss += loss.item()

        # validation
        val_loss = 0.0
        correct = 0
        total = 0
        for images, labels in val_loader:
            images, labels = images.to(device), labels.to(device)
            outputs = model(images)  # expect: missing-eval-mode, eval-without-no-grad
            val_loss += criterion(outputs, labels).item()
            _, predicted = torch.max(outputs, 1)
            total += labels.size(0)
            correct += (predicted == labels).sum().item()

        train_losses.append(running_loss / len(train_loader))
        val_losses.append(val_loss / len(val_loader))
        val_accs.append(correct / total)
        print(f"Epoch {epoch + 1}/{NUM_EPOCHS} - loss: {train_losses[-1]:.4f} "
              f"- val_loss: {val_losses[-1]:.4f} - val_acc: {val_accs[-1]:.4f}")

    torch.save(model.state_dict(), "simple_cnn.pth")
    plot_history(train_losses, val_losses, val_accs)


if __name__ == "__main__":
    main()
