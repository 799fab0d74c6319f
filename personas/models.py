from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models.functions import Lower
from django.utils import timezone

from memory.access import Role

# Field names follow the original Night Watch persona schema so exported souls stay compatible.
SOUL_FIELDS = {
    "whoIAm": str,
    "worldview": list,
    "opinions": dict,
    "expertise": list,
    "interests": list,
    "tensions": list,
    "boundaries": list,
    "petPeeves": list,
}
STYLE_FIELDS = {
    "voicePrinciples": str,
    "sentenceStructure": str,
    "tone": str,
    "wordsUsed": list,
    "wordsAvoided": list,
    "emojiUsage": dict,
    "quickReactions": dict,
    "rhetoricalMoves": list,
    "antiPatterns": list,
    "goodExamples": list,
    "badExamples": list,
}
SKILL_FIELDS = {
    "modes": dict,
    "interpolationRules": str,
    "additionalInstructions": list,
}


class Team(models.Model):
    """A team owns projects and personas: its members govern the memories of its projects and the
    settings of its personas. Unowned projects and personas are governed by the site-wide roles."""

    name = models.CharField(max_length=100, unique=True)
    slug = models.SlugField(max_length=100, unique=True, allow_unicode=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class MembershipSource(models.TextChoices):
    # Who keeps a membership: sign-in and SCIM change only their own, never one given by hand.
    MANUAL = "manual", "By hand"
    OIDC = "oidc", "Identity provider sign-in"
    SCIM = "scim", "SCIM provisioning"


class Membership(models.Model):
    """One person's role in one team."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.VIEWER)
    source = models.CharField(max_length=10, choices=MembershipSource.choices, default=MembershipSource.MANUAL)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="one_membership_per_team")]

    def __str__(self):
        return f"{self.user} · {self.get_role_display()} of {self.team}"


class TeamChange(models.Model):
    """Who changed a team, when: a team made or renamed, a member added, removed or given another
    role, a project or persona moved in or out. Kept like lesson history: never edited."""

    team = models.ForeignKey(Team, null=True, on_delete=models.SET_NULL, related_name="changes")
    team_name = models.CharField(max_length=100)  # kept readable after the team is deleted
    action = models.CharField(max_length=40)
    detail = models.CharField(max_length=500)
    by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self):
        return f"{self.at:%Y-%m-%d %H:%M} {self.team_name}: {self.detail}"


class Provider(models.TextChoices):
    DEFAULT = "", "Global default"
    OFFLINE = "offline", "Offline (deterministic)"
    ANTHROPIC = "anthropic", "Anthropic"
    OPENAI = "openai", "OpenAI"


class PersonaQuerySet(models.QuerySet):
    def active(self):
        return self.filter(archived_at__isnull=True, is_active=True)

    def not_archived(self):
        return self.filter(archived_at__isnull=True)

    def get_by_name(self, name):
        return self.get(name__iexact=name)


class Persona(models.Model):
    name = models.CharField(max_length=100)
    role = models.CharField(max_length=200, blank=True)
    avatar = models.CharField(
        max_length=300,
        blank=True,
        help_text=(
            "An https:// image URL to show as the avatar. Anything else (or nothing) shows the persona's "
            "initials on a colour of its own."
        ),
    )
    soul = models.JSONField(default=dict, blank=True)
    style = models.JSONField(default=dict, blank=True)
    skill = models.JSONField(default=dict, blank=True)

    provider = models.CharField(max_length=20, choices=Provider.choices, blank=True, default="")
    model_name = models.CharField(max_length=100, blank=True, help_text="Blank: the provider's default model.")
    max_tokens = models.PositiveIntegerField(
        default=1024, validators=[MinValueValidator(1), MaxValueValidator(200_000)]
    )
    temperature = models.FloatField(default=0.5, validators=[MinValueValidator(0.0), MaxValueValidator(2.0)])
    base_url = models.URLField(blank=True, help_text="Optional API base URL (a proxy or gateway).")
    detection_token_budget = models.PositiveIntegerField(
        default=200_000,
        validators=[MinValueValidator(1_000), MaxValueValidator(100_000_000)],
        help_text="Most model tokens (in and out) one promotion detection run of this persona's memories may use; "
        "a run that would need more stops before the call, with a message, and changes no candidate.",
    )

    system_prompt_override = models.TextField(
        blank=True, help_text="Replaces the identity, soul, style and skill sections. Memory is still appended."
    )
    reflection_prompt = models.TextField(blank=True, help_text="Replaces the role-flavoured reflection framing.")
    refinement_prompt = models.TextField(blank=True, help_text="Blank: the conservative default.")
    refinement_threshold = models.FloatField(
        default=0.90,
        validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="A refinement run that leaves less than this share of the memory's mass is rolled back.",
    )

    team = models.ForeignKey(
        Team,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="personas",
        help_text="The team whose approvers govern this persona's settings.",
    )
    is_active = models.BooleanField(default=True)
    archived_at = models.DateTimeField(null=True, blank=True)
    # Night Watch finds memories by exact folder name: the one a memory was imported from is the one
    # export writes (blank: the name itself, which is what Night Watch would use for a new persona).
    folder_name = models.CharField(max_length=255, blank=True, help_text="Memory folder name; blank: the name.")
    archived_folder = models.CharField(
        max_length=255, blank=True, help_text="Folder name under .archived/; blank: <name>-<archive time in ms>."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = PersonaQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(Lower("name"), name="persona_name_unique_ci"),
            models.CheckConstraint(
                condition=models.Q(provider__in=["", "offline", "anthropic", "openai"]), name="persona_provider_valid"
            ),
        ]

    def __str__(self):
        return self.name

    @property
    def is_archived(self):
        return self.archived_at is not None

    @property
    def memory_folder(self):
        return self.folder_name or self.name

    @property
    def effective_provider(self):
        return self.provider or settings.LLM_DEFAULT_PROVIDER


class PersonaAlias(models.Model):
    """A former name of a persona: agents still addressing it reach the persona it was renamed to."""

    persona = models.ForeignKey(Persona, on_delete=models.CASCADE, related_name="aliases")
    name = models.CharField(max_length=100)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "old name"
        constraints = [models.UniqueConstraint(Lower("name"), name="persona_alias_unique_ci")]

    def __str__(self):
        return self.name


class Project(models.Model):
    slug = models.SlugField(max_length=100, unique=True, allow_unicode=True, help_text="Used in URLs.")
    name = models.CharField(max_length=200)
    # Night Watch's project folder is the repository's directory name exactly as it is (spaces, dots,
    # any Unicode form); the URL slug is derived from it separately.
    folder_name = models.CharField(
        max_length=255, blank=True, help_text="Memory folder name exactly as Night Watch uses it; blank: the slug."
    )
    repository_url = models.URLField(blank=True, help_text="e.g. https://github.com/org/repo")
    repository_ref = models.CharField(max_length=200, blank=True, default="main", help_text="Branch, tag or commit.")
    checkout_path = models.CharField(max_length=500, blank=True, help_text="Optional local checkout, to check refs.")
    team = models.ForeignKey(
        Team,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="projects",
        help_text="The team whose members see and govern this project's memories.",
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    @property
    def memory_folder(self):
        return self.folder_name or self.slug

    def permalink(self, path, start_line=None, end_line=None, commit=None):
        """A browsable URL for a code reference (at `commit` when given, else the branch), or None
        when the project has no repository."""
        if not self.repository_url:
            return None
        base = self.repository_url.rstrip("/")
        if base.endswith(".git"):
            base = base[:-4]
        url = f"{base}/blob/{commit or self.repository_ref or 'main'}/{path.lstrip('/')}"
        if start_line:
            url += f"#L{start_line}"
            if end_line and end_line != start_line:
                url += f"-L{end_line}"
        return url
