"""Evaluation as torch 0.3 wrote it: volatile inputs, `loss.data[0]` for the scalar."""
import torch
from torch.autograd import Variable


def evaluate(model, loader, loss_fn, use_cuda=True):
    model.eval()
    total, correct, loss_sum = 0, 0, 0.0
    for data, target in loader:
        if use_cuda:
            data, target = data.cuda(async=True), target.cuda(async=True)  # expect: syntax-error
        data = Variable(data, volatile=True)
        target = Variable(target, volatile=True)
        output = model(data)  # ok: volatile inputs record no graph in torch 0.3
        loss_sum += loss_fn(output, target).data[0]  # ok: a 1-element tensor in torch 0.3
        pred = output.data.max(1)[1]
        correct += pred.eq(target.data).sum()
        total += target.size(0)
    return loss_sum / len(loader), correct / float(total)


def predict(model, loader):
    model.eval()
    preds = []
    for data, _ in loader:
        output = model(Variable(data.cuda(), volatile=True))  # ok
        preds.append(output.data.max(1)[1].cpu())
    return torch.cat(preds)
