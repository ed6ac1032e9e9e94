def overlap_score(candidate, references):
    """Mean unigram overlap of a caption with its references (a stand-in for CIDEr)."""
    cand = set(candidate)
    if not cand:
        return 0.0
    return sum(len(cand & set(r)) / len(cand) for r in references) / len(references)
