import torch
import torch.nn.functional as F

from reid.evaluation import inference_on_dataset, quick_eval, retrieval_score
from reid.modeling import EmbeddingNet


def do_test(model, loader):
    return inference_on_dataset(model, loader).norm(dim=1).mean()


def train(train_loader, test_loader, epochs, eval_period):
    model = EmbeddingNet(num_ids=751)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    model.train()
    for epoch in range(epochs):
        for images, ids in train_loader:
            loss = F.cross_entropy(model(images), ids)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if (epoch + 1) % eval_period == 0:
            print(do_test(model, test_loader))  # ok: inference_context restores the mode
            print(retrieval_score(model, test_loader))  # ok: frozen() restores it in finally


def train_with_probe(train_loader, test_loader, epochs):
    model = EmbeddingNet(num_ids=751)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-4)
    model.train()
    for epoch in range(epochs):
        for images, ids in train_loader:
            loss = F.cross_entropy(model(images), ids)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(quick_eval(model, test_loader))  # expect: missing-train-after-eval
