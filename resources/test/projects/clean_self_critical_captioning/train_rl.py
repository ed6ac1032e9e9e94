import torch
import torch.nn.functional as F

from captioner.model import Captioner
from captioner.reward import overlap_score


def self_critical_epoch(model, optimizer, loader, bos_id, n_samples=5):
    """One epoch of self-critical sequence training: sampled captions are rewarded against
    the greedy caption's score, and their log-probabilities carry the policy gradient."""
    model.train()
    for feats, references in loader:
        optimizer.zero_grad()
        bos = torch.full((feats.size(0),), bos_id, dtype=torch.long)
        with torch.no_grad():
            greedy = model.greedy(feats, bos)
        baselines = [overlap_score(g.tolist(), refs) for g, refs in zip(greedy, references)]
        sampled_logits, sampled_tokens, advantages = [], [], []
        for i, refs in enumerate(references):
            for _ in range(n_samples):
                logits, tokens = model.sample(feats[i : i + 1], bos[i : i + 1])
                score = overlap_score(tokens[0].tolist(), refs)
                sampled_logits.append(logits)
                sampled_tokens.append(tokens)
                advantages.append(score - baselines[i])
        all_logits = torch.cat(sampled_logits)
        all_tokens = torch.cat(sampled_tokens)
        log_probs = F.log_softmax(all_logits, dim=-1).gather(2, all_tokens.unsqueeze(2)).squeeze(2)
        adv = torch.tensor(advantages).unsqueeze(1)
        loss = -(adv * log_probs).mean()
        loss.backward()
        optimizer.step()


def main(loader, vocab_size, bos_id, epochs=10):
    model = Captioner(vocab_size)
    model.load_state_dict(torch.load("xe_pretrained.pth", weights_only=True))
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-5)
    for _ in range(epochs):
        self_critical_epoch(model, optimizer, loader, bos_id)
    torch.save(model.state_dict(), "scst.pth")
