"""The notebook shell: the anywidget widget and the offline HTML page. The only part of the
package that imports anywidget, ipywidgets or traitlets."""

from .widget import NeuralFlowWidget

__all__ = ["NeuralFlowWidget"]
