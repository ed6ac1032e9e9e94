import matplotlib.pyplot as plt
import torch


def plot_class_preds(net, images, labels, class_names):
    """Grid of images with the predicted and true class (the caller evaluated `net`)."""
    with torch.no_grad():
        preds = net(images).argmax(1)  # ok: train.py runs evaluate(model=...) first, which calls eval()
    fig = plt.figure(figsize=(10, 4))
    for i, (p, t) in enumerate(zip(preds.tolist(), labels.tolist())):
        ax = fig.add_subplot(1, len(labels), i + 1)
        ax.set_title(f"{class_names[p]} / {class_names[t]}")
    return fig


def show_samples(net, images, class_names):
    with torch.no_grad():
        preds = net(images).argmax(1)  # expect: missing-eval-mode
    for p in preds.tolist():
        print(class_names[p])
