from parameters import *


class encoder(nn.Module):
    def __init__(self, vocab_size):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, HIDDEN_SIZE, padding_idx=PAD_IDX)
        self.rnn = getattr(nn, RNN_TYPE)(HIDDEN_SIZE, HIDDEN_SIZE // 2, NUM_LAYERS, batch_first=True,
                                         dropout=DROPOUT, bidirectional=True)

    def forward(self, x):
        h, _ = self.rnn(self.embed(x))
        return h


class decoder(nn.Module):
    def __init__(self, vocab_size):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, HIDDEN_SIZE, padding_idx=PAD_IDX)
        self.rnn = getattr(nn, RNN_TYPE)(HIDDEN_SIZE, HIDDEN_SIZE, NUM_LAYERS, batch_first=True, dropout=DROPOUT)
        self.out = nn.Linear(HIDDEN_SIZE, vocab_size)

    def forward(self, y, memory):
        h, _ = self.rnn(self.embed(y) + memory.mean(1, keepdim=True))
        return self.out(h)


class rnn_encoder_decoder(nn.Module):
    def __init__(self, x_vocab, y_vocab):
        super().__init__()
        self.enc = encoder(len(x_vocab))
        self.dec = decoder(len(y_vocab))

    def forward(self, x, y):
        return self.dec(y[:, :-1], self.enc(x))
