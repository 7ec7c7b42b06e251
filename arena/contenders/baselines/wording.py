"""The baseline's sentences in the languages the arena's visitors ask in.

A question in one of these languages gets its answer in it (the prompt's
language is `arena.geo.language.guess_language`); any other gets English.
Country names come from pycountry's ISO 3166 translations; place names below
the country level stay as the gazetteer writes them (Latin script).
The sentences are ours, written for a person: no scores, no weights.
"""

from __future__ import annotations

import gettext
from dataclasses import dataclass
from functools import cache

import pycountry

ENGLISH = "en"


@dataclass(frozen=True)
class Wording:
    note: str  # {views}: "" or `views` below
    views: str  # {n}
    no_text: str
    question_names: str  # {places}
    no_place: str
    best_city: str  # {place} {point}
    best_country: str  # {country}
    certainty: str  # {level}
    levels: dict[str, str]  # low / medium / high
    read: str  # heading
    more_lines: str  # {n}
    why: str  # heading
    script_where: str  # {scripts} {countries}
    script_anywhere: str  # {scripts}
    names: str  # {text} {place} {kind}
    shared_name: str
    no_match: str
    kinds: dict[str, str]  # city / region / country
    others: str  # heading
    caveat: str
    coverage: str
    list_sep: str = ", "
    scripts: tuple[tuple[str, str], ...] = ()  # script name -> its name in this language


WORDINGS: dict[str, Wording] = {
    "en": Wording(
        note="> **Baseline contender**: an offline program, not a vision-language model. "
        "I go only by the text I can read in the photo{views}.",
        views=", read in {n} views of it",
        no_text="**I can't place this photo.** I found no legible text in it, and text is all I go by.",
        question_names="Your question mentions {places}; I can't confirm that from the photo.",
        no_place="**I can't place this photo.** The text I read names no place I know, "
        "and its writing is used too widely to point anywhere.",
        best_city="**Best guess: {place}** (about {point}).",
        best_country="**Best guess: somewhere in {country}.** That is a guess at the country only, not a point in it.",
        certainty="How sure I am: **{level}**.",
        levels={"low": "not very", "medium": "fairly", "high": "quite sure"},
        read="### What I read",
        more_lines="… and {n} more lines",
        why="### Why",
        script_where="The text is in {scripts}, which is written mostly in {countries}.",
        script_anywhere="The text is in {scripts}, which is written in many countries, so it points nowhere alone.",
        names="“{text}” is the name of {place} ({kind}).",
        shared_name="Other places share that name.",
        no_match="None of the text names a place I know.",
        kinds={"city": "a city", "region": "a region", "country": "a country"},
        others="### Also possible",
        caveat="I can't judge scenery, buildings or road markings.",
        coverage="My text reader knows Chinese characters and the Latin alphabet only.",
        scripts=(("Han", "Chinese characters"), ("Latin", "the Latin alphabet")),
    ),
    "zh": Wording(
        note="> **基线参赛者**：一个离线程序，不是视觉语言模型。我只根据照片中能读到的文字判断{views}。",
        views="（共读取了 {n} 个视图）",
        no_text="**我无法确定这张照片的位置。** 照片中没有可辨认的文字，而文字是我唯一的依据。",
        question_names="你的问题提到了{places}；我无法从照片中证实这一点。",
        no_place="**我无法确定这张照片的位置。** 读到的文字不包含我知道的地名，其文字在许多地方都使用，无法据此定位。",
        best_city="**最佳猜测：{place}**（约 {point}）。",
        best_country="**最佳猜测：{country}境内某处。** 这只是对国家的猜测，而不是具体地点。",
        certainty="把握程度：**{level}**。",
        levels={"low": "较低", "medium": "中等", "high": "较高"},
        read="### 我读到的文字",
        more_lines="……另有 {n} 行",
        why="### 理由",
        script_where="文字是{scripts}，主要在{countries}使用。",
        script_anywhere="文字是{scripts}，许多国家都在使用，单凭它无法定位。",
        names="“{text}”是{place}的名称（{kind}）。",
        shared_name="其他地方也有同样的名称。",
        no_match="这些文字中没有我知道的地名。",
        kinds={"city": "城市", "region": "地区", "country": "国家"},
        others="### 其他可能",
        caveat="我无法判断风景、建筑或道路标线。",
        coverage="我的文字识别只认识汉字和拉丁字母。",
        list_sep="、",
        scripts=(("Han", "汉字"), ("Latin", "拉丁字母")),
    ),
    "ja": Wording(
        note="> **ベースライン参加者**：視覚言語モデルではなく、オフラインのプログラムです。"
        "写真の中で読める文字だけを手がかりにしています{views}。",
        views="（{n} 通りの見え方で読み取り）",
        no_text="**この写真の場所は特定できません。** 読める文字が見つからず、文字が唯一の手がかりです。",
        question_names="ご質問には{places}とありますが、写真からは確認できません。",
        no_place="**この写真の場所は特定できません。** 読めた文字に知っている地名がなく、"
        "その文字は広く使われているため場所を絞れません。",
        best_city="**推定：{place}**（およそ {point}）。",
        best_country="**推定：{country}のどこか。** 国の推定にすぎず、特定の地点ではありません。",
        certainty="確からしさ：**{level}**。",
        levels={"low": "低い", "medium": "中程度", "high": "高い"},
        read="### 読み取った文字",
        more_lines="…ほかに {n} 行",
        why="### 理由",
        script_where="文字は{scripts}で、主に{countries}で使われています。",
        script_anywhere="文字は{scripts}で、多くの国で使われているため、それだけでは場所を示しません。",
        names="「{text}」は{place}の名前です（{kind}）。",
        shared_name="同じ名前の場所はほかにもあります。",
        no_match="読めた文字に知っている地名はありません。",
        kinds={"city": "都市", "region": "地域", "country": "国"},
        others="### ほかの可能性",
        caveat="風景、建物、道路標示は判断できません。",
        coverage="私の文字認識は漢字とラテン文字しか読めません。",
        list_sep="、",
        scripts=(("Han", "漢字"), ("Latin", "ラテン文字")),
    ),
    "ko": Wording(
        note="> **기준 참가자**: 시각 언어 모델이 아닌 오프라인 프로그램입니다. 사진에서 읽을 수 있는 글자만 근거로 삼습니다{views}.",
        views=" ({n}개의 보기에서 읽음)",
        no_text="**이 사진의 위치를 알 수 없습니다.** 읽을 수 있는 글자가 없는데, 글자가 제 유일한 근거입니다.",
        question_names="질문에 {places}이(가) 언급되어 있지만, 사진으로는 확인할 수 없습니다.",
        no_place="**이 사진의 위치를 알 수 없습니다.** 읽은 글자에 아는 지명이 없고, 그 문자는 널리 쓰여 위치를 가리키지 못합니다.",
        best_city="**최선의 추측: {place}** (약 {point}).",
        best_country="**최선의 추측: {country} 어딘가.** 나라만 추측한 것이며 특정 지점이 아닙니다.",
        certainty="확신 정도: **{level}**.",
        levels={"low": "낮음", "medium": "보통", "high": "높음"},
        read="### 읽은 글자",
        more_lines="… 그리고 {n}줄 더",
        why="### 근거",
        script_where="글자는 {scripts}(으)로, 주로 {countries}에서 쓰입니다.",
        script_anywhere="글자는 {scripts}(으)로, 여러 나라에서 쓰여 그것만으로는 위치를 알 수 없습니다.",
        names="“{text}”은(는) {place}의 이름입니다 ({kind}).",
        shared_name="같은 이름을 가진 다른 곳도 있습니다.",
        no_match="읽은 글자 중에 아는 지명이 없습니다.",
        kinds={"city": "도시", "region": "지역", "country": "나라"},
        others="### 다른 가능성",
        caveat="풍경, 건물, 도로 표시는 판단할 수 없습니다.",
        coverage="제 문자 인식은 한자와 라틴 문자만 읽습니다.",
        scripts=(("Han", "한자"), ("Latin", "라틴 문자")),
    ),
    "es": Wording(
        note="> **Concursante de referencia**: un programa sin conexión, no un modelo de visión y lenguaje. "
        "Me baso solo en el texto que puedo leer en la foto{views}.",
        views=", leída en {n} vistas",
        no_text="**No puedo ubicar esta foto.** No encontré texto legible, y el texto es mi única pista.",
        question_names="Tu pregunta menciona {places}; no puedo confirmarlo a partir de la foto.",
        no_place="**No puedo ubicar esta foto.** El texto que leí no nombra ningún lugar que conozca, "
        "y su escritura se usa en demasiados sitios para señalar uno.",
        best_city="**Mi mejor suposición: {place}** (aprox. {point}).",
        best_country="**Mi mejor suposición: algún lugar de {country}.** Es una suposición del país, no de un punto.",
        certainty="Seguridad: **{level}**.",
        levels={"low": "poca", "medium": "moderada", "high": "bastante"},
        read="### Lo que leí",
        more_lines="… y {n} líneas más",
        why="### Por qué",
        script_where="El texto está en {scripts}, que se escribe sobre todo en {countries}.",
        script_anywhere="El texto está en {scripts}, que se escribe en muchos países, así que por sí solo no señala nada.",
        names="«{text}» es el nombre de {place} ({kind}).",
        shared_name="Otros lugares comparten ese nombre.",
        no_match="Ninguna parte del texto nombra un lugar que conozca.",
        kinds={"city": "una ciudad", "region": "una región", "country": "un país"},
        others="### También posible",
        caveat="No puedo juzgar el paisaje, los edificios ni las marcas viales.",
        coverage="Mi lector de texto solo conoce los caracteres chinos y el alfabeto latino.",
        scripts=(("Han", "caracteres chinos"), ("Latin", "alfabeto latino")),
    ),
    "fr": Wording(
        note="> **Concurrent de référence** : un programme hors ligne, pas un modèle vision-langage. "
        "Je me fie uniquement au texte que je peux lire sur la photo{views}.",
        views=", lue sous {n} angles",
        no_text="**Je ne peux pas situer cette photo.** Je n'y ai trouvé aucun texte lisible, "
        "et le texte est mon seul indice.",
        question_names="Votre question mentionne {places} ; je ne peux pas le confirmer d'après la photo.",
        no_place="**Je ne peux pas situer cette photo.** Le texte lu ne nomme aucun lieu que je connaisse, "
        "et son écriture est trop répandue pour désigner un endroit.",
        best_city="**Meilleure hypothèse : {place}** (environ {point}).",
        best_country="**Meilleure hypothèse : quelque part en {country}.** "
        "C'est une hypothèse sur le pays seulement, pas un point précis.",
        certainty="Degré de certitude : **{level}**.",
        levels={"low": "faible", "medium": "moyen", "high": "élevé"},
        read="### Ce que j'ai lu",
        more_lines="… et {n} lignes de plus",
        why="### Pourquoi",
        script_where="Le texte est en {scripts}, écrit surtout en {countries}.",
        script_anywhere="Le texte est en {scripts}, écrit dans de nombreux pays : à lui seul, il ne désigne rien.",
        names="« {text} » est le nom de {place} ({kind}).",
        shared_name="D'autres lieux portent ce nom.",
        no_match="Aucun texte ne nomme un lieu que je connaisse.",
        kinds={"city": "une ville", "region": "une région", "country": "un pays"},
        others="### Autres possibilités",
        caveat="Je ne peux pas juger le paysage, les bâtiments ni le marquage routier.",
        coverage="Mon lecteur de texte ne connaît que les caractères chinois et l'alphabet latin.",
        scripts=(("Han", "caractères chinois"), ("Latin", "alphabet latin")),
    ),
    "de": Wording(
        note="> **Basis-Teilnehmer**: ein Offline-Programm, kein Bild-Sprach-Modell. "
        "Ich stütze mich nur auf den Text, den ich im Foto lesen kann{views}.",
        views=", in {n} Ansichten gelesen",
        no_text="**Ich kann dieses Foto nicht verorten.** Ich fand keinen lesbaren Text, "
        "und Text ist mein einziger Anhaltspunkt.",
        question_names="Ihre Frage nennt {places}; das kann ich am Foto nicht bestätigen.",
        no_place="**Ich kann dieses Foto nicht verorten.** Der gelesene Text nennt keinen Ort, den ich kenne, "
        "und seine Schrift ist zu weit verbreitet, um auf einen Ort zu zeigen.",
        best_city="**Beste Vermutung: {place}** (etwa {point}).",
        best_country="**Beste Vermutung: irgendwo in {country}.** Das ist nur eine Vermutung zum Land, kein Punkt darin.",
        certainty="Wie sicher ich bin: **{level}**.",
        levels={"low": "wenig", "medium": "einigermaßen", "high": "ziemlich"},
        read="### Was ich gelesen habe",
        more_lines="… und {n} weitere Zeilen",
        why="### Warum",
        script_where="Der Text ist in {scripts} geschrieben, vor allem üblich in {countries}.",
        script_anywhere="Der Text ist in {scripts} geschrieben, die in vielen Ländern üblich ist; allein zeigt sie nirgendwohin.",
        names="„{text}“ ist der Name von {place} ({kind}).",
        shared_name="Andere Orte tragen denselben Namen.",
        no_match="Kein Text nennt einen Ort, den ich kenne.",
        kinds={"city": "eine Stadt", "region": "eine Region", "country": "ein Land"},
        others="### Ebenfalls möglich",
        caveat="Landschaft, Gebäude oder Straßenmarkierungen kann ich nicht beurteilen.",
        coverage="Meine Texterkennung kennt nur chinesische Schriftzeichen und das lateinische Alphabet.",
        scripts=(("Han", "chinesischen Schriftzeichen"), ("Latin", "lateinischer Schrift")),
    ),
    "ru": Wording(
        note="> **Базовый участник**: офлайн-программа, а не визуально-языковая модель. "
        "Я сужу только по тексту, который могу прочитать на фото{views}.",
        views=" (прочитано в {n} видах)",
        no_text="**Я не могу определить, где сделано это фото.** На нём нет читаемого текста, "
        "а текст — моя единственная подсказка.",
        question_names="В вашем вопросе упомянуто: {places}; по фото я не могу это подтвердить.",
        no_place="**Я не могу определить, где сделано это фото.** Прочитанный текст не называет известных мне мест, "
        "а его письменность слишком распространена, чтобы указать на место.",
        best_city="**Лучшее предположение: {place}** (примерно {point}).",
        best_country="**Лучшее предположение: где-то в стране {country}.** "
        "Это догадка только о стране, а не точка на карте.",
        certainty="Уверенность: **{level}**.",
        levels={"low": "низкая", "medium": "средняя", "high": "высокая"},
        read="### Что я прочитал",
        more_lines="… и ещё {n} строк",
        why="### Почему",
        script_where="Текст написан {scripts}; так пишут в основном в странах: {countries}.",
        script_anywhere="Текст написан {scripts}; так пишут во многих странах, поэтому сама по себе письменность ни на что не указывает.",
        names="«{text}» — это название: {place} ({kind}).",
        shared_name="Так называются и другие места.",
        no_match="В тексте нет названий известных мне мест.",
        kinds={"city": "город", "region": "регион", "country": "страна"},
        others="### Также возможно",
        caveat="Я не могу оценить пейзаж, здания или дорожную разметку.",
        coverage="Моё распознавание текста знает только китайские иероглифы и латиницу.",
        scripts=(("Han", "китайскими иероглифами"), ("Latin", "латиницей")),
    ),
    "ar": Wording(
        note="> **متسابق مرجعي**: برنامج يعمل دون اتصال، وليس نموذجًا للرؤية واللغة. "
        "أعتمد فقط على النص الذي أستطيع قراءته في الصورة{views}.",
        views="، مقروءًا في {n} مناظر",
        no_text="**لا أستطيع تحديد مكان هذه الصورة.** لم أجد فيها نصًا مقروءًا، والنص هو دليلي الوحيد.",
        question_names="يذكر سؤالك {places}؛ لا أستطيع تأكيد ذلك من الصورة.",
        no_place="**لا أستطيع تحديد مكان هذه الصورة.** النص الذي قرأته لا يسمّي مكانًا أعرفه، "
        "وكتابته منتشرة على نطاق واسع فلا تشير إلى مكان بعينه.",
        best_city="**أفضل تخمين: {place}** (تقريبًا {point}).",
        best_country="**أفضل تخمين: مكان ما في {country}.** هذا تخمين للبلد فقط، وليس نقطة محددة فيه.",
        certainty="درجة الثقة: **{level}**.",
        levels={"low": "منخفضة", "medium": "متوسطة", "high": "عالية"},
        read="### ما قرأته",
        more_lines="… و{n} سطرًا آخر",
        why="### السبب",
        script_where="النص مكتوب بـ{scripts}، وهي تُكتب غالبًا في {countries}.",
        script_anywhere="النص مكتوب بـ{scripts}، وهي تُكتب في بلدان كثيرة، فلا تشير وحدها إلى مكان.",
        names="«{text}» هو اسم {place} ({kind}).",
        shared_name="هناك أماكن أخرى تحمل الاسم نفسه.",
        no_match="لا يسمّي أي نص مكانًا أعرفه.",
        kinds={"city": "مدينة", "region": "منطقة", "country": "بلد"},
        others="### احتمالات أخرى",
        caveat="لا أستطيع الحكم على المناظر أو المباني أو علامات الطريق.",
        coverage="قارئ النصوص لديّ يعرف الحروف الصينية والأبجدية اللاتينية فقط.",
        list_sep="، ",
        scripts=(("Han", "الحروف الصينية"), ("Latin", "الأبجدية اللاتينية")),
    ),
    "pt": Wording(
        note="> **Concorrente de referência**: um programa offline, não um modelo de visão e linguagem. "
        "Baseio-me apenas no texto que consigo ler na foto{views}.",
        views=", lida em {n} vistas",
        no_text="**Não consigo localizar esta foto.** Não encontrei texto legível, e o texto é a minha única pista.",
        question_names="A sua pergunta menciona {places}; não consigo confirmar isso pela foto.",
        no_place="**Não consigo localizar esta foto.** O texto que li não nomeia nenhum lugar que eu conheça, "
        "e a sua escrita é usada em lugares demais para apontar um.",
        best_city="**Melhor palpite: {place}** (cerca de {point}).",
        best_country="**Melhor palpite: algum lugar em {country}.** É um palpite sobre o país, não um ponto nele.",
        certainty="Grau de certeza: **{level}**.",
        levels={"low": "baixo", "medium": "médio", "high": "alto"},
        read="### O que li",
        more_lines="… e mais {n} linhas",
        why="### Porquê",
        script_where="O texto está em {scripts}, escrito sobretudo em {countries}.",
        script_anywhere="O texto está em {scripts}, escrito em muitos países, por isso sozinho não aponta para lugar nenhum.",
        names="“{text}” é o nome de {place} ({kind}).",
        shared_name="Outros lugares têm o mesmo nome.",
        no_match="Nenhum texto nomeia um lugar que eu conheça.",
        kinds={"city": "uma cidade", "region": "uma região", "country": "um país"},
        others="### Também possível",
        caveat="Não consigo avaliar a paisagem, os edifícios nem as marcas na estrada.",
        coverage="O meu leitor de texto só conhece caracteres chineses e o alfabeto latino.",
        scripts=(("Han", "caracteres chineses"), ("Latin", "alfabeto latino")),
    ),
}

# pycountry's catalogue names for the languages above
_ISO3166_LOCALES = {"zh": "zh_CN", "pt": "pt_BR"}


def wording_for(language: str) -> Wording:
    """The sentences for a prompt's language (ISO 639-1), English when it has none."""
    return WORDINGS.get(language, WORDINGS[ENGLISH])


def language_of(language: str) -> str:
    return language if language in WORDINGS else ENGLISH


@cache
def _translations(language: str) -> gettext.NullTranslations:
    locale = _ISO3166_LOCALES.get(language, language)
    return gettext.translation("iso3166-1", pycountry.LOCALES_DIR, languages=[locale], fallback=True)


def country_name(code: str, language: str) -> str:
    """A country's name in the language, from pycountry's ISO 3166 translations."""
    country = pycountry.countries.get(alpha_2=code)
    if country is None:
        return code
    if language == ENGLISH:
        return str(getattr(country, "common_name", None) or country.name)
    return _translations(language).gettext(country.name)


def script_name(script: str, language: str) -> str:
    return dict(wording_for(language).scripts).get(script, script)
