"""Plot Twist's schema vocabulary, prompt, extraction and accuracies."""
