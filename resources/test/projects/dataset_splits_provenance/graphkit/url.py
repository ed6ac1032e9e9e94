import os
import os.path as osp
import urllib.request
import zipfile


def download_url(url, folder):
    os.makedirs(folder, exist_ok=True)
    path = osp.join(folder, url.rpartition("/")[2])
    if not osp.exists(path):
        with urllib.request.urlopen(url) as response, open(path, "wb") as f:
            f.write(response.read())
    return path


def extract_zip(path, folder):
    with zipfile.ZipFile(path, "r") as f:
        f.extractall(folder)
