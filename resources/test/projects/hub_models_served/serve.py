"""A small Flask service that exposes two torch.hub models."""
import argparse
import io

import torch
from flask import Flask, request
from PIL import Image

from preprocess import to_batch

app = Flask(__name__)


@app.route("/v1/detect", methods=["POST"])
def predict():
    img = Image.open(io.BytesIO(request.files["image"].read()))
    results = detector(img, size=640)  # ok: Ultralytics' hub models come back wrapped in AutoShape, in eval mode
    return results.pandas().xyxy[0].to_json(orient="records")


@app.route("/v1/classify", methods=["POST"])
def classify():
    img = Image.open(io.BytesIO(request.files["image"].read()))
    with torch.no_grad():
        logits = classifier(to_batch(img))  # expect: missing-eval-mode
    return {"label": int(logits.argmax(1))}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", default=5000, type=int)
    args = parser.parse_args()
    detector = torch.hub.load("ultralytics/yolov5", "yolov5s")
    classifier = torch.hub.load("pytorch/vision", "resnet50", weights="IMAGENET1K_V2")
    app.run(host="0.0.0.0", port=args.port)
