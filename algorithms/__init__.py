"""The iterative programs iterflow ships: PageRank, weakly connected components, k-means."""
from algorithms.kmeans import KMeans
from algorithms.pagerank import PageRank
from algorithms.wcc import WeaklyConnectedComponents

__all__ = ["PageRank", "WeaklyConnectedComponents", "KMeans"]
