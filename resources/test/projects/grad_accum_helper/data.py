from datasets import load_dataset
from torch.utils.data import DataLoader
from transformers import DataCollatorWithPadding


def build_loaders(tokenizer, batch_size, max_length=256):
    raw = load_dataset("imdb")

    def tokenize(examples):
        return tokenizer(examples["text"], truncation=True, max_length=max_length)

    tokenized = raw.map(tokenize, batched=True, remove_columns=["text"]).rename_column("label", "labels")
    tokenized.set_format("torch")
    collator = DataCollatorWithPadding(tokenizer)
    train = DataLoader(tokenized["train"], batch_size=batch_size, shuffle=True, collate_fn=collator)
    test = DataLoader(tokenized["test"], batch_size=2 * batch_size, collate_fn=collator)
    return train, test
