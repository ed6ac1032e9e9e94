import torch.nn.functional as F


def distillation_loss(student_logits, teacher_logits, targets, temperature=4.0, alpha=0.9):
    soft = F.kl_div(
        F.log_softmax(student_logits / temperature, dim=1),
        F.softmax(teacher_logits / temperature, dim=1),  # ok: probabilities as the KL target
        reduction="batchmean",
    ) * temperature ** 2
    hard = F.cross_entropy(student_logits, targets)
    return alpha * soft + (1.0 - alpha) * hard
