from django.urls import include, path

# One folder per concept: each feature's urls live beside its views, services and models.
urlpatterns = [
    path("", include("memory.lessons.urls")),
    path("promotions/", include("memory.promotions.urls")),
    path("compactions/", include("memory.compaction.urls")),
    path("refinement/", include("memory.refinement.urls")),
    path("llm/", include("memory.engines.urls")),
    path("pipeline/", include("memory.pipeline.urls")),
    path("refs/", include("memory.refs.urls")),
    path("account/", include("memory.digest.urls")),
    path("file-conflicts/", include("memory.sync.urls")),
    path("search/", include("memory.search.urls")),
    path("conflicts/", include("memory.conflicts.urls")),
]
