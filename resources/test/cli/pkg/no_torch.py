import json

data = json.load(open("x.json"))
