from .metrics import accuracy


class Trainer:
    def __init__(self, model, criterion):
        self.model = model
        self.criterion = criterion

    def train(self, epoch, data_loader, optimizer, print_freq=10):
        self.model.train()
        for i, (imgs, pids) in enumerate(data_loader):
            outputs = self.model(imgs)
            loss = self.criterion(outputs, pids)
            (prec,) = accuracy(outputs.data, pids.data)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if (i + 1) % print_freq == 0:
                print(f"Epoch {epoch} [{i + 1}/{len(data_loader)}] loss {loss.item():.3f} prec {prec.item():.2%}")
