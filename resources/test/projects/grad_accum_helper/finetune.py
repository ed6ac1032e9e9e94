import argparse
import logging

import torch
from tqdm.auto import tqdm
from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup

from data import build_loaders
from engine import evaluate, forward_backward

logger = logging.getLogger(__name__)


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--model-name", default="distilbert-base-uncased")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--accum-steps", type=int, default=4)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--lr", type=float, default=3e-5)
    p.add_argument("--max-grad-norm", type=float, default=1.0)
    p.add_argument("--output-dir", default="out/imdb")
    return p.parse_args()


def main():
    args = parse_args()
    logging.basicConfig(level=logging.INFO)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    tokenizer = AutoTokenizer.from_pretrained(args.model_name)
    model = AutoModelForSequenceClassification.from_pretrained(args.model_name, num_labels=2).to(device)
    train_loader, test_loader = build_loaders(tokenizer, args.batch_size)

    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    updates = args.epochs * len(train_loader) // args.accum_steps
    scheduler = get_linear_schedule_with_warmup(optimizer, int(0.06 * updates), updates)

    for epoch in range(args.epochs):
        model.train()
        for step, batch in enumerate(tqdm(train_loader, desc=f"epoch {epoch}")):
            loss = forward_backward(model, batch, optimizer, args.accum_steps, device)  # expect: zero-grad-misplaced
            if (step + 1) % args.accum_steps == 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
                optimizer.step()
                scheduler.step()
            if step % 200 == 0:
                logger.info("epoch %d step %d loss %.4f lr %.2e", epoch, step, loss, scheduler.get_last_lr()[0])
        logger.info("epoch %d test accuracy %.4f", epoch, evaluate(model, test_loader, device))
    model.save_pretrained(args.output_dir)
    tokenizer.save_pretrained(args.output_dir)


if __name__ == "__main__":
    main()
