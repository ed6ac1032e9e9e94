from parameters import *


class encoder(nn.Module):
    def __init__(self, vocab_size):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, EMBED_SIZE, padding_idx=PAD_IDX)
        layer = nn.TransformerEncoderLayer(EMBED_SIZE, NUM_HEADS, dropout=DROPOUT, batch_first=True)
        self.layers = nn.TransformerEncoder(layer, NUM_LAYERS)

    def forward(self, x):
        return self.layers(self.embed(x))


class decoder(nn.Module):
    def __init__(self, vocab_size):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, EMBED_SIZE, padding_idx=PAD_IDX)
        layer = nn.TransformerDecoderLayer(EMBED_SIZE, NUM_HEADS, dropout=DROPOUT, batch_first=True)
        self.layers = nn.TransformerDecoder(layer, NUM_LAYERS)
        self.out = nn.Linear(EMBED_SIZE, vocab_size)

    def forward(self, y, memory):
        return self.out(self.layers(self.embed(y), memory))


class transformer(nn.Module):
    def __init__(self, x_vocab, y_vocab):
        super().__init__()
        self.enc = encoder(len(x_vocab))
        self.dec = decoder(len(y_vocab))

    def forward(self, x, y):
        return self.dec(y[:, :-1], self.enc(x))
