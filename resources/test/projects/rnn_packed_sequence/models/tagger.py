import torch.nn as nn
import torch.nn.utils.rnn as rnn_utils


class BiLSTMTagger(nn.Module):
    """Scores every non-padding token; outputs follow the packed (time-major) token order."""

    def __init__(self, vocab_size, num_tags, embed_dim=100, hidden_dim=128, dropout=0.3, pad_idx=0):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=pad_idx)
        self.dropout = nn.Dropout(dropout)
        self.lstm = nn.LSTM(embed_dim, hidden_dim, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(2 * hidden_dim, num_tags)

    def forward(self, tokens, lengths):
        emb = self.dropout(self.embedding(tokens))
        packed = rnn_utils.pack_padded_sequence(emb, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, _ = self.lstm(packed)
        return self.fc(self.dropout(out.data))

    def decode(self, tokens, lengths):
        emb = self.embedding(tokens)
        packed = rnn_utils.pack_padded_sequence(emb, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, _ = self.lstm(packed)
        padded, out_lengths = rnn_utils.pad_packed_sequence(out, batch_first=True)  # ok: (padded, lengths)
        return self.fc(padded).argmax(dim=-1), out_lengths
