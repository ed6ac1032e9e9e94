from utils import *
from model import *


def load_data(filename):
    batches = []
    with open(filename) as fo:
        for line in fo:
            x, y = line.strip().split("\t")
            batches.append((list(map(int, x.split())), list(map(int, y.split()))))
    return batches


def train():
    num_epochs = int(sys.argv[-1])
    x_wti = load_tkn_to_idx(sys.argv[2])
    y_wti = load_tkn_to_idx(sys.argv[3])
    model = rnn_encoder_decoder(x_wti, y_wti)
    if CUDA:
        model = model.cuda()
    optim = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    epoch = load_checkpoint(sys.argv[1], model) if isfile(sys.argv[1]) else 0
    data = load_data(sys.argv[4])
    print("training model...")
    for ei in range(epoch + 1, epoch + num_epochs + 1):
        loss_sum = 0
        timer = time()
        for x, y in data:
            x, y = torch.tensor([x]), torch.tensor([y])
            out = model(x, y)
            loss = F.cross_entropy(out.flatten(0, 1), y[:, 1:].flatten(), ignore_index=PAD_IDX)
            optim.zero_grad()
            loss.backward()
            optim.step()
            loss_sum += loss.item()
        if ei % SAVE_EVERY and ei != epoch + num_epochs:
            save_checkpoint("", None, ei, loss_sum, time() - timer)
        else:
            save_checkpoint(sys.argv[1], model, ei, loss_sum, time() - timer)


if __name__ == "__main__":
    from os.path import isfile
    train()
