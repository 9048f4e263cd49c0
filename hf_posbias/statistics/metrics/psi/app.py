"""Gradio widget for the metric when this folder is pushed as a Hugging Face Space."""

from pathlib import Path

if __name__ == "__main__":  # a Space runs `python app.py`; importing this file does nothing
    import evaluate
    from evaluate.utils import launch_gradio_widget

    launch_gradio_widget(evaluate.load(str(Path(__file__).resolve().parent)))
