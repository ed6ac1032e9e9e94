class History:
    def __init__(self):
        self.records = []

    def __call__(self, epoch, logs):
        self.records.append({"epoch": epoch, **logs})
        return False


class EarlyStopping:
    def __init__(self, monitor="val_loss", patience=5, mode="min"):
        self.monitor = monitor
        self.patience = patience
        self.sign = 1.0 if mode == "min" else -1.0
        self.best = float("inf")
        self.bad_epochs = 0

    def __call__(self, epoch, logs):
        value = self.sign * logs[self.monitor]
        if value < self.best:
            self.best, self.bad_epochs = value, 0
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.patience
