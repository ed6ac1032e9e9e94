"""Road-scene segmentation."""
