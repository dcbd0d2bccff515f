"""MMSci's question texts, multiple-choice scoring and captioning metrics."""
