import lightning as L
from datasets import load_dataset
from torch.utils.data import DataLoader
from transformers import AutoTokenizer, DataCollatorWithPadding


class AGNewsData(L.LightningDataModule):
    def __init__(self, model_name="bert-base-uncased", batch_size=32, max_length=128):
        super().__init__()
        self.tokenizer = AutoTokenizer.from_pretrained(model_name)
        self.batch_size = batch_size
        self.max_length = max_length

    def setup(self, stage=None):
        ds = load_dataset("ag_news")
        ds = ds.map(lambda b: self.tokenizer(b["text"], truncation=True, max_length=self.max_length), batched=True)
        ds = ds.rename_column("label", "labels").remove_columns(["text"])
        ds.set_format("torch")
        self.train_ds, self.test_ds = ds["train"], ds["test"]
        self.collate = DataCollatorWithPadding(self.tokenizer)

    def train_dataloader(self):
        return DataLoader(self.train_ds, batch_size=self.batch_size, shuffle=True, collate_fn=self.collate, num_workers=4)

    def val_dataloader(self):
        return DataLoader(self.test_ds, batch_size=2 * self.batch_size, collate_fn=self.collate, num_workers=4)
