import matplotlib.pyplot as plt


def plot_history(train_losses, val_losses, val_accs, path="history.png"):
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    ax1.plot(train_losses, label="train")
    ax1.plot(val_losses, label="val")
    ax1.set_title("loss")
    ax1.legend()
    ax2.plot(val_accs)
    ax2.set_title("val accuracy")
    fig.savefig(path)
