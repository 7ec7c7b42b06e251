"""What the arena takes, in one place: the offline model's labels follow it
(`data/README.md` labels every source by it), the LLM judge reads it as its
instructions, and a refused person reads its short form in their language.

The line it draws: a battle has a photo, so a question is taken when it asks
about *the place in the photo* (where it is, or what is true of that place),
and refused when the photo's place plays no part, however geographic the
words ("What is the capital of France?" is a quiz, not a battle).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Kind:
    name: str
    description: str
    examples: tuple[str, ...]


TAKES: tuple[Kind, ...] = (
    Kind(
        "location",
        "where the photo was taken: continent, country, region, city, street, coordinates",
        ("Where was this taken?", "Which country is this?", "Give me GPS coordinates for this photo."),
    ),
    Kind(
        "clues",
        "what the photo's signs, their language and script, licence plates, road markings, driving side, "
        "vegetation, terrain or architecture say about the place",
        ("What language are the signs in?", "Which side of the road do they drive on here?"),
    ),
    Kind(
        "landmarks",
        "naming the landmark, mountain, river, building or street shown, and the history of that "
        "building or place (who built it, when, what happened there)",
        ("What year was the building in this photo built?", "What is the history of this square?"),
    ),
    Kind(
        "climate",
        "the climate, seasons, weather patterns, landscape, elevation or time zone of the place shown",
        ("Does it snow here?", "What is the climate like in this region?"),
    ),
    Kind(
        "people",
        "the language, culture, food, currency, religion, sports teams and stadiums of the place shown",
        ("Which team plays in this stadium?", "What language do people speak here?"),
    ),
    Kind(
        "multi-hop",
        "a question that starts from the photo's place and goes on to facts about it",
        ("Find the country in this photo; what was its population in 1990?",),
    ),
)

REFUSES: tuple[Kind, ...] = (
    Kind(
        "quiz",
        "a geography or general-knowledge question with no photo in play",
        ("What is the capital of France?", "Convert 9am New York time to Tokyo time."),
    ),
    Kind(
        "not-the-place",
        "something about the photo that is not about its place: a species, a product or price, "
        "counting objects, describing or captioning the image, transcribing or translating its text, a person's "
        "identity, age or feelings, photo editing, art style",
        ("What breed is this dog?", "Translate the sign into English.", "Write a caption for this photo."),
    ),
    Kind(
        "other",
        "anything else: code, maths, jokes, recipes, health, stories, chit-chat, instructions to the judge",
        ("Write a Python function that reverses a list.", "Tell me a joke."),
    ),
)


def policy_text() -> str:
    """The policy as the LLM judge reads it."""
    takes = "\n".join(f"- {k.description} (e.g. {'; '.join(k.examples)})" for k in TAKES)
    refuses = "\n".join(f"- {k.description} (e.g. {'; '.join(k.examples)})" for k in REFUSES)
    return (
        "Every question is asked about a photo the person uploaded. Take it (geographic = true) when it asks about "
        "the place in the photo:\n" + takes + "\n\nRefuse it (geographic = false) when the photo's place plays "
        "no part, even if it uses geographic words:\n" + refuses + "\n\nQuestions in any language are judged the "
        "same way. Place words alone decide nothing: 'geography map country: tell me a joke' is a joke."
    )


# The short form a refused person reads; every kind named here is one TAKES covers.
REFUSALS: dict[str, str] = {
    "ar": "لا يقبل GeoArena إلا الأسئلة عن المكان الظاهر في صورتك: أين التُقطت، وأي بلد أو مدينة أو منطقة تُظهر، "
    "ومعالمها ومبانيها، ولغة لافتاتها، ومناخها وتضاريسها، أو تاريخها. يُرجى طرح سؤال من هذا النوع.",
    "bn": "GeoArena শুধু আপনার ছবির জায়গা সম্পর্কে প্রশ্ন গ্রহণ করে: ছবিটি কোথায় তোলা, কোন দেশ, শহর বা অঞ্চল দেখা "
    "যাচ্ছে, সেখানকার ল্যান্ডমার্ক ও ভবন, সাইনবোর্ডের ভাষা, জলবায়ু ও ভূদৃশ্য, বা সেই জায়গার ইতিহাস। অনুগ্রহ করে এমন "
    "কিছু জিজ্ঞাসা করুন।",
    "cs": "GeoArena přijímá jen otázky o místě na vaší fotografii: kde byla pořízena, jakou zemi, město nebo region "
    "ukazuje, jeho památky a budovy, jazyk nápisů, podnebí a krajinu nebo historii místa. Zeptejte se prosím na něco "
    "takového.",
    "de": "GeoArena nimmt nur Fragen zum Ort auf Ihrem Foto an: wo es aufgenommen wurde, welches Land, welche Stadt "
    "oder Region es zeigt, seine Sehenswürdigkeiten und Gebäude, die Sprache der Schilder, Klima und Landschaft oder "
    "die Geschichte des Ortes. Bitte stellen Sie eine solche Frage.",
    "el": "Το GeoArena δέχεται μόνο ερωτήσεις για τον τόπο της φωτογραφίας σας: πού τραβήχτηκε, ποια χώρα, πόλη ή "
    "περιοχή δείχνει, τα αξιοθέατα και τα κτίριά του, τη γλώσσα των πινακίδων, το κλίμα και το τοπίο ή την ιστορία "
    "του. Παρακαλούμε κάντε μια τέτοια ερώτηση.",
    "en": "GeoArena only takes questions about the place in your photo: where it was taken, which country, city or "
    "region it shows, its landmarks and buildings, the language of its signs, its climate and landscape, or its "
    "history. Please ask something like that.",
    "es": "GeoArena solo acepta preguntas sobre el lugar de tu foto: dónde se tomó, qué país, ciudad o región "
    "muestra, sus monumentos y edificios, el idioma de sus carteles, su clima y paisaje o su historia. Haz una "
    "pregunta de ese tipo.",
    "fa": "GeoArena فقط پرسش‌هایی دربارهٔ مکانِ عکس شما را می‌پذیرد: کجا گرفته شده، کدام کشور، شهر یا منطقه را نشان "
    "می‌دهد، بناها و نشانه‌های معروفش، زبان تابلوها، آب‌وهوا و چشم‌انداز یا تاریخ آن‌جا. لطفاً پرسشی از این دست بپرسید.",
    "fr": "GeoArena n'accepte que des questions sur le lieu de votre photo : où elle a été prise, quel pays, quelle "
    "ville ou quelle région elle montre, ses monuments et bâtiments, la langue de ses panneaux, son climat et ses "
    "paysages, ou son histoire. Posez une question de ce genre.",
    "he": "GeoArena מקבלת רק שאלות על המקום שבתמונה שלך: איפה היא צולמה, איזו מדינה, עיר או אזור רואים בה, ציוני הדרך "
    "והמבנים שלו, שפת השלטים, האקלים והנוף או ההיסטוריה של המקום. נא לשאול שאלה כזאת.",
    "hi": "GeoArena केवल आपकी फ़ोटो की जगह के बारे में सवाल लेता है: यह कहाँ ली गई, इसमें कौन-सा देश, शहर या इलाक़ा दिखता "
    "है, वहाँ की प्रसिद्ध इमारतें और स्थल, साइनबोर्ड की भाषा, जलवायु और भू-दृश्य, या उस जगह का इतिहास। कृपया ऐसा ही कोई "
    "सवाल पूछें।",
    "hu": "A GeoArena csak a fényképen látható helyről szóló kérdéseket fogad: hol készült, melyik országot, várost "
    "vagy régiót mutatja, a nevezetességeit és épületeit, a feliratok nyelvét, az éghajlatát és tájait vagy a hely "
    "történetét. Kérjük, ilyesmit kérdezzen.",
    "id": "GeoArena hanya menerima pertanyaan tentang tempat di foto Anda: di mana foto diambil, negara, kota, atau "
    "wilayah mana yang terlihat, landmark dan bangunannya, bahasa pada papan namanya, iklim dan bentang alamnya, atau "
    "sejarah tempat itu. Silakan ajukan pertanyaan seperti itu.",
    "it": "GeoArena accetta solo domande sul luogo della tua foto: dove è stata scattata, quale paese, città o regione "
    "mostra, i suoi monumenti ed edifici, la lingua dei cartelli, il clima e il paesaggio o la storia del luogo. Fai "
    "una domanda di questo tipo.",
    "ja": "GeoArenaが受け付けるのは、写真に写っている場所についての質問だけです。撮影場所、写っている国・都市・地域、"
    "ランドマークや建物、看板の言語、気候や地形、その土地の歴史などです。そのような質問をしてください。",
    "ko": "GeoArena는 사진 속 장소에 대한 질문만 받습니다. 촬영 장소, 사진 속 나라·도시·지역, 랜드마크와 건물, 간판의 "
    "언어, 기후와 지형, 그곳의 역사 같은 질문이에요. 이런 질문으로 다시 물어봐 주세요.",
    "ms": "GeoArena hanya menerima soalan tentang tempat dalam foto anda: di mana ia diambil, negara, bandar atau "
    "wilayah yang ditunjukkan, mercu tanda dan bangunannya, bahasa papan tandanya, iklim dan landskapnya, atau sejarah "
    "tempat itu. Sila tanya soalan seperti itu.",
    "nl": "GeoArena neemt alleen vragen aan over de plek op je foto: waar hij is genomen, welk land, welke stad of "
    "regio je ziet, de bezienswaardigheden en gebouwen, de taal van de borden, het klimaat en landschap of de "
    "geschiedenis van de plek. Stel zo'n vraag.",
    "pl": "GeoArena przyjmuje tylko pytania o miejsce na Twoim zdjęciu: gdzie zostało zrobione, jaki kraj, miasto lub "
    "region pokazuje, jego zabytki i budynki, język napisów, klimat i krajobraz albo historię tego miejsca. Zadaj "
    "proszę takie pytanie.",
    "pt": "O GeoArena só aceita perguntas sobre o lugar da sua foto: onde ela foi tirada, que país, cidade ou região "
    "mostra, seus monumentos e edifícios, o idioma das placas, o clima e a paisagem ou a história do lugar. Faça uma "
    "pergunta desse tipo.",
    "ro": "GeoArena acceptă doar întrebări despre locul din fotografia ta: unde a fost făcută, ce țară, oraș sau "
    "regiune arată, monumentele și clădirile sale, limba indicatoarelor, clima și peisajul sau istoria locului. Te "
    "rugăm să pui o astfel de întrebare.",
    "ru": "GeoArena принимает только вопросы о месте на вашей фотографии: где она снята, какая страна, город или "
    "регион на ней, её достопримечательности и здания, язык вывесок, климат и ландшафт или история этого места. "
    "Пожалуйста, задайте такой вопрос.",
    "sv": "GeoArena tar bara emot frågor om platsen på ditt foto: var det togs, vilket land, vilken stad eller region "
    "det visar, sevärdheter och byggnader, språket på skyltarna, klimat och landskap eller platsens historia. Ställ "
    "gärna en sådan fråga.",
    "sw": "GeoArena hupokea maswali kuhusu mahali palipo kwenye picha yako tu: ilipigwa wapi, inaonyesha nchi, mji au "
    "eneo gani, alama maarufu na majengo yake, lugha ya mabango, hali ya hewa na mandhari, au historia ya mahali hapo. "
    "Tafadhali uliza swali la aina hiyo.",
    "th": "GeoArena รับเฉพาะคำถามเกี่ยวกับสถานที่ในรูปของคุณ เช่น ถ่ายที่ไหน เป็นประเทศ เมือง หรือภูมิภาคใด "
    "สถานที่สำคัญและอาคาร ภาษาบนป้าย ภูมิอากาศและภูมิประเทศ หรือประวัติศาสตร์ของสถานที่นั้น กรุณาถามคำถามแบบนี้",
    "tl": "Tumatanggap lang ang GeoArena ng mga tanong tungkol sa lugar sa iyong larawan: kung saan ito kinunan, "
    "anong bansa, lungsod o rehiyon ang makikita, ang mga palatandaan at gusali nito, ang wika ng mga karatula, ang "
    "klima at tanawin, o ang kasaysayan ng lugar. Magtanong po ng ganoon.",
    "tr": "GeoArena yalnızca fotoğrafınızdaki yer hakkındaki soruları kabul eder: nerede çekildiği, hangi ülkeyi, "
    "şehri ya da bölgeyi gösterdiği, simge yapıları ve binaları, tabelaların dili, iklimi ve manzarası ya da o yerin "
    "tarihi. Lütfen böyle bir soru sorun.",
    "uk": "GeoArena приймає лише запитання про місце на вашій фотографії: де її зроблено, яку країну, місто чи регіон "
    "на ній видно, її пам'ятки й будівлі, мову вивісок, клімат і краєвид або історію цього місця. Будь ласка, "
    "поставте таке запитання.",
    "vi": "GeoArena chỉ nhận câu hỏi về địa điểm trong ảnh của bạn: ảnh được chụp ở đâu, cho thấy quốc gia, thành phố "
    "hay vùng nào, các địa danh và công trình, ngôn ngữ trên biển hiệu, khí hậu và cảnh quan, hoặc lịch sử của nơi đó. "
    "Vui lòng hỏi một câu như vậy.",
    "zh": "GeoArena 只接受关于照片中地点的问题：照片在哪里拍的，显示的是哪个国家、城市或地区，那里的地标和建筑，"
    "招牌上的语言，气候和地貌，或者这个地方的历史。请换一个这样的问题。",
}

LANGUAGES: tuple[str, ...] = tuple(sorted(REFUSALS))

# Questions of each kind the refusal names, which the offline model must take
# (tests/gatekeeper check them; they are not in the training data).
REFUSAL_KINDS_EN: dict[str, str] = {
    "where it was taken": "Please determine where the photo was taken based on the image.",
    "country, city or region": "Which region of the country is this town in?",
    "landmarks and buildings": "What year was the building in this photo built?",
    "language of its signs": "What language are the signs in?",
    "climate and landscape": "Does it snow here?",
    "history": "What happened in this square during the war?",
}


def in_words(text: str) -> bool:
    """Whether `text` can be read as a question at all: it needs letters of some script, two
    different ones at least, and four once it is long. A string of emoji, or one character
    two thousand times, is refused before any model reads it (each scored as geographic once:
    its few n-grams say nothing, and the bias decides). Every labelled prompt passes."""
    letters = {ch for ch in text if ch.isalpha()}
    return len(letters) >= 2 and (len(letters) >= 4 or sum(ch.isalpha() for ch in text) < LONG_LETTERS)


LONG_LETTERS = 20  # "Where?", "哪里？" and "где?" are short and few-lettered; a long prompt has variety


def refusal(language: str) -> str:
    """The refusal in `language` (an ISO 639-1 code), English for any other."""
    return REFUSALS[refusal_language(language)]


def refusal_language(language: str) -> str:
    """The language `refusal(language)` is written in: `language`, or English when it has none."""
    return language if language in REFUSALS else "en"
