"""Binary/multi-class segmentation building blocks."""
